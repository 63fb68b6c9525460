"""XML-tag parser: ``<think>...</think><answer>...</answer>`` style outputs."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from verifiers.parsers.parser import Parser, assistant_texts
from verifiers.types import Messages

FieldSpec = str | Sequence[str]


def _occurrences(text: str, tag: str) -> list[tuple[int, str]]:
    """Every ``<tag>...</tag>`` as (offset, body), in order. Linear: an open tag with no later close
    ends the scan."""
    open_t, close_t = f"<{tag}>", f"</{tag}>"
    out: list[tuple[int, str]] = []
    pos = 0
    while True:
        start = text.find(open_t, pos)
        if start < 0:
            return out
        body_start = start + len(open_t)
        end = text.find(close_t, body_start)
        if end < 0:
            return out
        out.append((start, text[body_start:end].strip()))
        pos = end + len(close_t)


class XMLParser(Parser):
    """Parses named XML fields. A field may have alternative tag names: ``("answer", "final")`` —
    the first name is the canonical attribute, any of the names is accepted in text.

    ``parse(text)`` gives a namespace with the *last* occurrence of each field (``None`` if absent);
    ``parse_all(text)`` gives every occurrence, in order, per canonical name.
    """

    def __init__(self, fields: Sequence[FieldSpec], answer_field: str = "answer") -> None:
        super().__init__()
        self.fields: list[tuple[str, ...]] = []
        for f in fields:
            names = (f,) if isinstance(f, str) else tuple(f)
            if not names or not all(isinstance(n, str) and n.isidentifier() for n in names):
                raise ValueError(f"XMLParser field {f!r} must be a tag name or a tuple of tag names")
            self.fields.append(names)
        canon = [n[0] for n in self.fields]
        if len(set(canon)) != len(canon):
            raise ValueError(f"duplicate XMLParser fields: {canon}")
        if answer_field not in canon:
            raise ValueError(f"answer_field {answer_field!r} is not one of the fields {canon}")
        self.answer_field = answer_field

    def parse_all(self, text: str) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for names in self.fields:
            found = [occ for name in names for occ in _occurrences(text, name)]
            found.sort(key=lambda t: t[0])  # document order across alternative names
            result[names[0]] = [b for _, b in found]
        return result

    def parse(self, text: str) -> SimpleNamespace:
        return SimpleNamespace(**{k: (v[-1] if v else None) for k, v in self.parse_all(text).items()})

    def parse_answer(self, completion: Messages | str) -> str | None:
        for text in reversed(assistant_texts(completion)):
            value = getattr(self.parse(text), self.answer_field)
            if value is not None:
                return str(value)
        return None

    def follows_format(self, text: str) -> bool:
        parsed = self.parse_all(text)
        return all(len(v) == 1 for v in parsed.values())

    def format(self, **values: str) -> str:
        """Render fields as XML, in declared order (for few-shot examples)."""
        parts = []
        for names in self.fields:
            key = next((n for n in names if n in values), None)
            if key is not None:
                parts.append(f"<{names[0]}>\n{values[key]}\n</{names[0]}>")
        return "\n".join(parts)
