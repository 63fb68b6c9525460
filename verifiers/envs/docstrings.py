"""Parameter descriptions from a function's docstring, for tool schemas.

Reads the summary (the text before the first section) and the per-parameter descriptions of Google
(``Args:``), NumPy (``Parameters`` + ``----------``) and reST (``:param x:``) docstrings; the styles may even
be mixed. Types written in a docstring are ignored: they come from the signature's annotations.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a tool schema needs from a docstring."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


_GOOGLE_PARAM_HEADERS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "other parameters",
}
_GOOGLE_HEADERS = _GOOGLE_PARAM_HEADERS | {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "raise",
    "examples",
    "example",
    "note",
    "notes",
    "attributes",
    "see also",
    "warning",
    "warnings",
    "todo",
    "references",
}
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
_REST_PARAM = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:(.*)$"
)
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _paragraphs(lines: list[str]) -> str:
    """Join wrapped lines into paragraphs (one space inside, a blank line between)."""
    paras: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line.strip())
        elif current:
            paras.append(" ".join(current))
            current = []
    if current:
        paras.append(" ".join(current))
    return "\n\n".join(paras)


def _section_kind(lines: list[str], i: int) -> str | None:
    """Whether line ``i`` opens a docstring section, and of which style."""
    text = lines[i].strip()
    if text.endswith(":") and text[:-1].strip().lower() in _GOOGLE_HEADERS:
        return "google"
    if i + 1 < len(lines) and text and _UNDERLINE.match(lines[i + 1]):
        return "numpy"
    if text.startswith(":") and re.match(r"^:\w+", text):
        return "rest"
    return None


def _block(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """Lines from ``start`` until one that is non-blank and indented at most ``base``."""
    out: list[str] = []
    i = start
    while i < len(lines):
        line = lines[i]
        if line.strip() and _indent(line) <= base:
            break
        out.append(line)
        i += 1
    return out, i


def _numpy_body(lines: list[str], start: int) -> tuple[list[str], int]:
    """A NumPy section runs until the next ``Header`` + ``-----`` pair (or the end)."""
    i = start
    while i < len(lines) and not (i + 1 < len(lines) and lines[i].strip() and _UNDERLINE.match(lines[i + 1])):
        i += 1
    return lines[start:i], i


def _entries(body: list[str], pattern: re.Pattern[str]) -> dict[str, str]:
    """Parameter entries of a Google or NumPy section body: an entry line at the body's own indent,
    then continuation lines indented deeper."""
    params: dict[str, str] = {}
    indents = [_indent(line) for line in body if line.strip()]
    if not indents:
        return params
    base = min(indents)
    names: list[str] = []
    desc: list[str] = []

    def flush() -> None:
        for n in names:
            params[n] = _paragraphs(desc)

    for line in body:
        if line.strip() and _indent(line) == base:
            flush()
            m = pattern.match(line.strip())
            names, desc = [], []
            if m is None:
                continue
            names = [n.strip().lstrip("*") for n in m.group(1).split(",")]
            if pattern is _GOOGLE_ENTRY:
                desc = [m.group(2)]
        else:
            desc.append(line)
    flush()
    return params


def parse_docstring(doc: str | None) -> Docstring:
    """The description (text before the first section) and per-parameter descriptions of a docstring
    in Google, NumPy or reST style (styles may even be mixed)."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    first = next((i for i in range(len(lines)) if _section_kind(lines, i)), len(lines))
    description = _paragraphs(lines[:first])
    params: dict[str, str] = {}
    i = first
    while i < len(lines):
        kind = _section_kind(lines, i)
        header = lines[i].strip().rstrip(":").strip().lower()
        if kind == "google":
            body, i = _block(lines, i + 1, _indent(lines[i]))
            if header in _GOOGLE_PARAM_HEADERS:
                params.update(_entries(body, _GOOGLE_ENTRY))
        elif kind == "numpy":
            body, i = _numpy_body(lines, i + 2)
            if header in _GOOGLE_PARAM_HEADERS:
                params.update(_entries(body, _NUMPY_ENTRY))
        elif kind == "rest":
            m = _REST_PARAM.match(lines[i].strip())
            body, i = _block(lines, i + 1, _indent(lines[i]))
            if m is not None:
                params[m.group(1)] = _paragraphs([m.group(2), *body])
        else:
            i += 1
    return Docstring(description=description, params=params)
