"""What the model reads of long outputs: clipping (R2E-Gym) and head/tail elision (mini-swe-agent)."""

from __future__ import annotations

#: R2E-Gym clips every observation at this many characters and marks the cut with ``<response clipped>``.
CLIP_CHARS = 10_000
CLIP_MARKER = (
    "<response clipped><NOTE>Only part of this output is shown, to save context. Narrow it down "
    "(e.g. `search` for the term, or `view` with a `view_range`) to see the rest.</NOTE>"
)
#: R2E-Gym shows at most this many lines of a bash output's head and of its tail.
BASH_EDGE_LINES = 40
#: mini-swe-agent: outputs of this many characters or more are shown as head + tail of half of it each.
ELIDE_CHARS = 10_000


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` cut at ``limit`` characters, the cut marked with ``CLIP_MARKER``."""
    if len(text) <= limit:
        return text
    return text[:limit] + CLIP_MARKER


def elide_lines(text: str, edge: int = BASH_EDGE_LINES) -> str:
    """R2E-Gym's bash observation: more than ``2 * edge`` lines keep the first and last ``edge``."""
    lines = text.splitlines()
    if len(lines) <= 2 * edge:
        return text
    divider = "-" * 50
    return "\n".join(
        [
            *lines[:edge],
            divider,
            "<Observation truncated in middle for saving context>",
            divider,
            *lines[-edge:],
        ]
    )


def elide_middle(text: str, limit: int = ELIDE_CHARS) -> tuple[str, str, int] | None:
    """mini-swe-agent's elision: ``(head, tail, elided characters)`` when ``text`` has ``limit`` characters
    or more (head and tail are ``limit // 2`` each), else ``None``."""
    if len(text) < limit:
        return None
    half = limit // 2
    return text[:half], text[-half:], len(text) - limit
