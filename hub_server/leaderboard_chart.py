"""The environment page's chart of mean reward by model: server-side SVG, readable without JavaScript.

One horizontal bar per model (its best leaderboard entry), with the 95% confidence interval as a whisker.
Model names are uploaded text: they go through ``markupsafe.escape``; everything else is formatted from
numbers. No inline styles (the CSP forbids them): presentation attributes and the stylesheet's classes.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from verifiers.hub import wire

_W, _LABEL, _BAR, _GAP, _TOP = 640, 220, 18, 8, 22
_MAX_BARS = 30


def best_by_model(entries: Sequence[wire.LeaderboardEntry]) -> list[wire.LeaderboardEntry]:
    """Each model's first entry in the leaderboard's own order (its best-ranked one), in that order."""
    best: dict[str, wire.LeaderboardEntry] = {}
    for e in entries:
        best.setdefault(e.model, e)
    return list(best.values())


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reward_chart_svg(entries: Sequence[wire.LeaderboardEntry]) -> Markup:
    """SVG bars of mean reward per model on a shared axis (0 to max(1, highest reward)); empty for none."""
    rows = best_by_model(entries)[:_MAX_BARS]
    if not rows:
        return Markup("")
    # The axis covers the rewards (0..1 for most rubrics); a whisker beyond it is clipped, not the axis widened.
    top = max([1.0, *[e.avg_reward or 0.0 for e in rows]])
    low = min([0.0, *[e.avg_reward or 0.0 for e in rows]])
    plot = _W - _LABEL - 110

    def x(value: float) -> float:
        return _LABEL + (min(max(value, low), top) - low) / (top - low) * plot

    height = _TOP + len(rows) * (_BAR + _GAP) + 20
    parts = [
        f'<svg class="reward-chart" viewBox="0 0 {_W} {height}" width="100%" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" aria-labelledby="reward-chart-title">',
        '<title id="reward-chart-title">Mean reward by model</title>',
        f'<line x1="{x(0):.1f}" y1="{_TOP - 6}" x2="{x(0):.1f}" y2="{height - 18}" stroke="#98a2b3"/>',
    ]
    for tick in (low, (low + top) / 2, top):
        parts.append(
            f'<text x="{x(tick):.1f}" y="{_TOP - 10}" font-size="11" text-anchor="middle" '
            f'fill="#667085">{tick:.2f}</text>'
        )
    for i, e in enumerate(rows):
        y = _TOP + i * (_BAR + _GAP)
        label = escape(_short(e.model))
        parts.append(
            f'<text x="{_LABEL - 8}" y="{y + _BAR - 4}" font-size="12" text-anchor="end" fill="#1d2330">'
            f"<title>{escape(e.model)} (v{escape(e.version)})</title>{label}</text>"
        )
        if e.avg_reward is None:
            parts.append(
                f'<text x="{x(0) + 4:.1f}" y="{y + _BAR - 4}" font-size="12" fill="#667085">no score</text>'
            )
            continue
        start, end = sorted((x(0), x(e.avg_reward)))
        parts.append(
            f'<rect class="bar" x="{start:.1f}" y="{y}" width="{max(end - start, 1.0):.1f}" '
            f'height="{_BAR}" fill="#3050c8" rx="2"/>'
        )
        label_x = end
        if e.reward_ci_low is not None and e.reward_ci_high is not None:
            lo, hi = x(e.reward_ci_low), x(e.reward_ci_high)
            mid = y + _BAR / 2
            parts.append(
                f'<path d="M{lo:.1f} {mid:.1f}H{hi:.1f}M{lo:.1f} {mid - 5:.1f}V{mid + 5:.1f}'
                f'M{hi:.1f} {mid - 5:.1f}V{mid + 5:.1f}" stroke="#1d2330" stroke-width="1.5" fill="none"/>'
            )
            label_x = max(end, hi)
        parts.append(
            f'<text x="{label_x + 6:.1f}" y="{y + _BAR - 4}" font-size="12" fill="#1d2330">{e.avg_reward:.3f}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
