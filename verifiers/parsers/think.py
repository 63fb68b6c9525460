"""Parsers for reasoning models that think inside ``<think>...</think>`` before answering."""

from __future__ import annotations

from verifiers.parsers.parser import Parser

_OPEN = "<think>"
_CLOSE = "</think>"


def unclosed_think(text: str) -> bool:
    """Whether ``text`` ends inside a ``<think>`` block (its last ``<think>`` is never closed): reasoning
    that was cut off, whose text must not be read as an answer."""
    return text.rfind(_OPEN) > text.rfind(_CLOSE)


class ThinkParser(Parser):
    """Strict: the message must contain a closed think block; the answer is read after the last ``</think>``.

    A message whose ``<think>`` is never closed (the model ran out of tokens while thinking) yields
    ``None``, as does one with no think block at all.
    """

    def parse(self, text: str) -> str | None:
        if _CLOSE not in text:
            return None
        after = text.rsplit(_CLOSE, 1)[1]
        if _OPEN in after:  # a second, unclosed think block after the last close
            return None
        return self.extract_fn(after.strip())

    def follows_format(self, text: str) -> bool:
        stripped = text.lstrip()
        return (
            stripped.startswith(_OPEN)
            and stripped.count(_OPEN) == 1
            and stripped.count(_CLOSE) == 1
            and (self.parse(text) is not None)
        )


class MaybeThinkParser(Parser):
    """Think-aware but lenient: strips a closed think block if present, else reads the whole message.

    An unclosed ``<think>`` still yields ``None``: text cut off mid-thought is never taken as an answer.
    """

    def parse(self, text: str) -> str | None:
        if unclosed_think(text):
            return None
        last_close = text.rfind(_CLOSE)
        if last_close >= 0:
            text = text[last_close + len(_CLOSE) :]
        return self.extract_fn(text.strip())
