"""A tokenizer for a small expression language."""

from __future__ import annotations

from dataclasses import dataclass

OPERATORS = ["**", "//", "==", "!=", "<=", ">=", "->", "+", "-", "*", "/", "%", "<", ">", "=", "(", ")", ",", "[", "]"]
KEYWORDS = frozenset({"and", "or", "not", "if", "else", "let", "in"})
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


@dataclass(frozen=True)
class Token:
    kind: str  # NUMBER, STRING, NAME, KEYWORD, OP
    value: str
    pos: int


class TokenizeError(ValueError):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(f"at {pos}: {message}")
        self.pos = pos


def _operators_longest_first() -> list[str]:
    return sorted(OPERATORS, key=len)


def _number(text: str, i: int) -> int:
    j = i
    while j < len(text) and text[j].isdigit():
        j += 1
    if j < len(text) and text[j] == "." and j + 1 < len(text) and text[j + 1].isdigit():
        j += 1
        while j < len(text) and text[j].isdigit():
            j += 1
    if j < len(text) and text[j] in "eE":
        k = j + 1
        if k < len(text) and text[k] in "+-":
            k += 1
        if k < len(text) and text[k].isdigit():
            j = k
            while j < len(text) and text[j].isdigit():
                j += 1
    return j


def _string(text: str, i: int) -> tuple[str, int]:
    quote = text[i]
    out = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == quote:
            return "".join(out), j + 1
        if ch == "\\":
            if j + 1 >= len(text):
                break
            esc = text[j + 1]
            if esc not in _ESCAPES:
                raise TokenizeError(j, f"unknown escape \\{esc}")
            out.append(_ESCAPES[esc])
            j += 2
            continue
        out.append(ch)
        j += 1
    raise TokenizeError(i, "unterminated string")


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    ops = _operators_longest_first()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
        elif ch.isdigit():
            j = _number(text, i)
            tokens.append(Token("NUMBER", text[i:j], i))
            i = j
        elif ch in "\"'":
            value, j = _string(text, i)
            tokens.append(Token("STRING", value, i))
            i = j
        elif ch.isalpha() or ch == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            tokens.append(Token("KEYWORD" if word in KEYWORDS else "NAME", word, i))
            i = j
        else:
            for op in ops:
                if text.startswith(op, i):
                    tokens.append(Token("OP", op, i))
                    i += len(op)
                    break
            else:
                raise TokenizeError(i, f"unexpected character {ch!r}")
    return tokens


def values(text: str) -> list[str]:
    return [t.value for t in tokenize(text)]
