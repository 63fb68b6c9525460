"""The option letter a model chose on a multiple-choice question, or ``None`` when it committed to none.

Read from the answer text (after any reasoning), strongest signal first, the last occurrence winning:

1. the last ``\\boxed{C}`` (also ``\\boxed{\\text{C}}``, ``\\boxed{(C)}``, ``\\boxed{C) text}``);
2. the last answer statement: ``Answer: C``, ``The answer is (C)``, ``Final answer: **C**``,
   ``**Answer:** C``, ``the correct answer is option C.``;
3. a text that ends on the letter alone: a last line ``C`` / ``(C)`` / ``**C**`` / ``Option C``, or a
   closing bold ``… so it must be **C**.``.

Only capital letters of the question's options count. A letter must stand alone: followed by the end of
the line, punctuation or a bracket — so ``Answer: I think it is B`` reads ``B`` (never the pronoun "I"),
``Answer: A good case can be made for D`` reads nothing from its "A", and a distractor mentioned in passing
(``(B) is tempting, but …``) is never the answer. There is no fallback to "any letter in the text": what
none of the rules finds is unparsed.
"""

from __future__ import annotations

import re
from functools import cache

from verifiers.parsers.boxed import extract_boxed_answer

#: Option letters, up to MMLU-Pro's ten (kept equal to ``verifiers.data.choices.LETTERS``).
LETTERS = "ABCDEFGHIJ"

_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf|textrm|mbox|mathit|textit)\s*\{([^{}]*)\}")


#: Letters that are also English words ("A good case…", "I think…"): they count only when they stand alone.
_WORDS = "AI"
#: A hedge between an answer statement and its letter ("Answer: I think it is B"): skipped, never read.
_HEDGE = r"(?:I\s+(?:think|believe|guess|would\s+say)\s+(?:(?:it|this|that)(?:\s+is|'s)\s+|that\s+)?)?"
_ALONE = r"(?=\s*(?:$|[.,;:!?)\]*$]|[-–—]\s|is\b))"


@cache
def _patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    cls = f"[{letters}]"
    plain = "".join(c for c in letters if c not in _WORDS)
    words = "".join(c for c in letters if c in _WORDS)
    bare = ([rf"([{plain}])(?![\w'])"] if plain else []) + ([rf"([{words}]){_ALONE}"] if words else [])
    # A letter standing alone: in brackets, or bare (a word-like letter followed by the end, punctuation,
    # markup or "is"; any other letter by anything but more word characters).
    token = rf"(?:\(\s*({cls})\s*\)|\[\s*({cls})\s*\]|\$?(?:{'|'.join(bare)}))"
    boxed = re.compile(rf"^\s*\(?\s*({cls})\s*\)?\s*(?:[.:)]\s*.*)?$", re.DOTALL)
    answer = re.compile(
        r"(?i:\b(?:final\s+|correct\s+|best\s+)?answer)\**\s*"
        r"(?i:(?:is|would\s+be|must\s+be|should\s+be|will\s+be)\b)?\s*(?i:therefore\s+|thus\s+)?"
        r"[:：=]?\s*\**\s*" + _HEDGE + r"(?i:option\s+|choice\s+)?" + token,
        re.MULTILINE,
    )
    last_line = re.compile(
        rf"^\W*?(?i:option\s+|choice\s+)?(?:\*\*)?\s*\(?\s*({cls})\s*\)?\s*(?:\*\*)?\W*$", re.DOTALL
    )
    closing_bold = re.compile(rf"\*\*\s*\(?\s*({cls})\s*\)?\s*\*\*[\s.!)]*$")
    return boxed, answer, last_line, closing_bold


def _first_group(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g)


def extract_choice_letter(text: str, letters: str = LETTERS) -> str | None:
    """The option letter ``text`` commits to (one of ``letters``), or ``None`` (see the module docstring)."""
    if not letters or any(c not in LETTERS for c in letters):
        raise ValueError(f"letters must be some of {LETTERS!r}, not {letters!r}")
    boxed, answer, last_line, closing_bold = _patterns(letters)
    inner = extract_boxed_answer(text)
    if inner is not None:
        plain = _WRAPPERS.sub(r"\1", inner).replace("$", "").strip()
        m = boxed.match(plain)
        if m:
            return m.group(1)
    statements = list(answer.finditer(text))
    if statements:
        return _first_group(statements[-1])
    lines = [line for line in text.splitlines() if line.strip()]
    if lines:
        m = last_line.match(lines[-1])
        if m:
            return m.group(1)
    m = closing_bold.search(text)
    return m.group(1) if m else None
