"""Reading answers out of model text: think-aware, tag-first, linear in the text length."""

from __future__ import annotations

import re
from collections.abc import Sequence

import verifiers as vf

_CODE_BLOCK = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.DOTALL)


class LogicParser(vf.MaybeThinkParser):
    """Ignores a closed ``<think>`` block and reads the last ``<answer>...</answer>`` after it.

    A message whose ``<think>`` never closes gives no answer (text cut off mid-thought is not an answer).
    """

    def __init__(self) -> None:
        self._xml = vf.XMLParser(["answer"])
        self._after_think = vf.MaybeThinkParser()  # the message after a closed think block, as is
        super().__init__(extract_fn=self._answer_tag)

    def _answer_tag(self, text: str) -> str | None:
        value = self._xml.parse(text).answer
        return None if value is None else str(value)

    def final_text(self, completion: vf.Messages | str) -> str | None:
        """The last assistant message with any closed think block removed (``None`` if unclosed)."""
        texts = vf.parsers.assistant_texts(completion)
        if not texts:
            return None
        return self._after_think.parse(texts[-1])

    def follows_format(self, text: str) -> bool:
        """Exactly one closed ``<answer>`` block after the (optional, closed) think block."""
        after = self._after_think.parse(text)
        return after is not None and len(self._xml.parse_all(after)["answer"]) == 1


def last_code_block(text: str) -> str | None:
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1].strip() if blocks else None


def last_nested_brackets(text: str, pairs: Sequence[str] = ("[[", "((")) -> str | None:
    """The last ``[[...]]`` / ``((...))`` structure, matched by depth (a linear scan)."""
    best: str | None = None
    for opener in pairs:
        start = text.rfind(opener)
        if start < 0:
            continue
        o, c = opener[0], {"[": "]", "(": ")"}[opener[0]]
        depth = 0
        for i in range(start, len(text)):
            if text[i] == o:
                depth += 1
            elif text[i] == c:
                depth -= 1
                if depth == 0:
                    candidate = text[start : i + 1]
                    if best is None or text.rfind(candidate) > text.rfind(best):
                        best = candidate
                    break
    return best
