"""What the eval pages show, computed on the server: the reward histogram (SVG), the per-example table and
the error breakdown. Shared by the hub's pages and the local viewer (``hub_server.local_view``).

The histogram is SVG markup built here from numbers only (every label is formatted from a float or an
int, never from uploaded text), so it is safe to embed; the CSP forbids inline styles, so it is styled
with presentation attributes and the stylesheet's classes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from markupsafe import Markup

ExampleSort = Literal["example", "mean", "spread"]
_W, _H, _PAD = 480, 160, 24


@dataclass(frozen=True)
class Cell:
    rollout_index: int
    reward: float | None
    error: str | None


@dataclass(frozen=True)
class ExampleRow:
    example_id: int
    cells: tuple[Cell, ...]
    mean: float | None
    spread: float | None  # max - min over scored rollouts: where variance is


def example_rows(records: Iterable[Mapping[str, Any]], sort: ExampleSort = "example") -> list[ExampleRow]:
    """Rollouts grouped by example (reward of each, or its error category), sorted as asked."""
    grouped: dict[int, list[Cell]] = {}
    for r in records:
        error = r.get("error")
        cell = Cell(int(r["rollout_index"]), r.get("reward"), str(error["category"]) if error else None)
        grouped.setdefault(int(r["example_id"]), []).append(cell)
    rows = []
    for example_id, cells in grouped.items():
        scored = [c.reward for c in cells if c.reward is not None and c.error is None]
        rows.append(
            ExampleRow(
                example_id,
                tuple(sorted(cells, key=lambda c: c.rollout_index)),
                sum(scored) / len(scored) if scored else None,
                max(scored) - min(scored) if scored else None,
            )
        )
    if sort == "mean":
        rows.sort(key=lambda r: (r.mean is None, -(r.mean or 0.0), r.example_id))
    elif sort == "spread":
        rows.sort(key=lambda r: (r.spread is None, -(r.spread or 0.0), r.example_id))
    else:
        rows.sort(key=lambda r: r.example_id)
    return rows


@dataclass(frozen=True)
class ErrorKind:
    category: str
    type: str
    count: int
    example: str  # one message, for the table


def error_breakdown(records: Iterable[Mapping[str, Any]]) -> list[ErrorKind]:
    """Errors by (category, type), most frequent first."""
    seen: dict[tuple[str, str], list[Any]] = {}
    for r in records:
        error = r.get("error")
        if not error:
            continue
        key = (str(error.get("category", "")), str(error.get("type", "")))
        entry = seen.setdefault(key, [0, str(error.get("message", ""))[:300]])
        entry[0] += 1
    kinds = [ErrorKind(c, t, n, msg) for (c, t), (n, msg) in seen.items()]
    kinds.sort(key=lambda k: (-k.count, k.category, k.type))
    return kinds


def histogram_svg(rewards: Sequence[float], bins: int = 10) -> Markup:
    """A bar chart of ``rewards`` as inline SVG (readable without JavaScript)."""
    if not rewards:
        return Markup('<p class="muted">No scored rollouts.</p>')
    lo, hi = min(rewards), max(rewards)
    if math.isclose(lo, hi):
        lo, hi = lo - 0.5, hi + 0.5
    width = (hi - lo) / bins
    counts = [0] * bins
    for r in rewards:
        counts[min(bins - 1, int((r - lo) / width))] += 1
    top = max(counts)
    bar_w = (_W - 2 * _PAD) / bins
    parts = [
        f'<svg class="histogram" viewBox="0 0 {_W} {_H + 2 * _PAD}" role="img" '
        f'aria-label="Reward histogram of {len(rewards)} scored rollouts" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, count in enumerate(counts):
        h = (_H * count / top) if top else 0
        x = _PAD + i * bar_w
        y = _PAD + _H - h
        left = lo + i * width
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" fill="#3050c8">'
            f"<title>{left:.3g} to {left + width:.3g}: {count}</title></rect>"
        )
        if count:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle" font-size="11">{count}</text>'
            )
    base = _PAD + _H
    parts.append(f'<line x1="{_PAD}" y1="{base}" x2="{_W - _PAD}" y2="{base}" stroke="#667085"/>')
    for value, x in ((lo, _PAD), ((lo + hi) / 2, _W / 2), (hi, _W - _PAD)):
        parts.append(
            f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle" font-size="11">{value:.3g}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def scored_rewards(records: Iterable[Mapping[str, Any]]) -> list[float]:
    return [float(r["reward"]) for r in records if r.get("reward") is not None and not r.get("error")]
