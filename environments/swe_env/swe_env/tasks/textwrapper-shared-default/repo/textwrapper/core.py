"""Greedy word wrapping, paragraph filling and column layout."""

from __future__ import annotations


def wrap(text: str, width: int, *, indent: str = "", lines: list[str] = []) -> list[str]:  # noqa: B006
    """Break ``text`` into lines of at most ``width`` characters (words longer than ``width`` stand alone).

    Lines are appended to ``lines`` when given (to build one list from several calls).
    """
    if width < 1:
        raise ValueError("width must be positive")
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else indent + word
        if len(candidate) <= width or not current:
            current = candidate
        else:
            lines.append(current)
            current = indent + word
    if current:
        lines.append(current)
    return lines


def fill(text: str, width: int) -> str:
    """Paragraphs (separated by blank lines) wrapped and joined back together."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join("\n".join(wrap(p, width)) for p in paragraphs)


def justify(line: str, width: int) -> str:
    """Spread the words of ``line`` so it is exactly ``width`` wide (extra spaces go left first)."""
    words = line.split()
    if len(words) < 2:
        return line.ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    if spaces < gaps:
        return " ".join(words)
    base, extra = divmod(spaces, gaps)
    out = ""
    for i, word in enumerate(words[:-1]):
        out += word + " " * (base + (1 if i < extra else 0))
    return out + words[-1]


def columns(items: list[str], width: int, gap: int = 2) -> list[str]:
    """Lay ``items`` out in as many columns as fit in ``width``, filled column by column."""
    if not items:
        return []
    cell = max(len(i) for i in items) + gap
    ncols = max(1, (width + gap) // cell)
    nrows = -(-len(items) // ncols)
    rows = []
    for r in range(nrows):
        row = [items[c * nrows + r] for c in range(ncols) if c * nrows + r < len(items)]
        rows.append("".join(i.ljust(cell) for i in row).rstrip())
    return rows


def shorten(text: str, width: int, placeholder: str = " [...]") -> str:
    """Collapse whitespace and cut at a word boundary so the result fits in ``width``."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= width:
        return collapsed
    words: list[str] = []
    for word in collapsed.split():
        if len(" ".join([*words, word])) + len(placeholder) > width:
            break
        words.append(word)
    return " ".join(words) + placeholder
