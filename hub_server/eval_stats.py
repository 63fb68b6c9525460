"""A run's aggregates from its rollouts: mean reward with its 95% interval, pass@k, metrics, errors, usage;
and the bound the leaderboard ranks runs by (``ranking_bound``).

Pure functions over uploaded rollout records (``wire.RolloutRecord`` dumps), shared by finalizing a run on
the hub and by the local viewer, so both show the same numbers. An errored rollout is counted under its
category and never scored (DESIGN.md 3.5).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.hub.wire import ks_for, pass_at_k

#: A rollout counts as passed for pass@k when its reward reaches this (the SDK's default threshold).
PASS_THRESHOLD = 1.0
#: z for a two-sided 95% normal interval.
Z95 = 1.959963984540054


@dataclass
class Aggregates:
    rollout_count: int = 0
    scored_count: int = 0
    avg_reward: float | None = None
    std_reward: float | None = None
    reward_ci95: float | None = None
    pass_at_k: dict[str, float] = field(default_factory=dict)
    avg_metrics: dict[str, float] = field(default_factory=dict)
    error_counts: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def aggregate(records: Iterable[Mapping[str, Any]], rollouts_per_example: int) -> Aggregates:
    """The aggregates of ``records`` (each with example_id, reward, metrics, error, usage)."""
    out = Aggregates()
    rewards: list[float] = []
    errors: dict[str, int] = defaultdict(int)
    metric_sums: dict[str, float] = defaultdict(float)
    metric_counts: dict[str, int] = defaultdict(int)
    per_example: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for data in records:
        out.rollout_count += 1
        usage = data.get("usage") or {}
        out.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        out.completion_tokens += int(usage.get("completion_tokens") or 0)
        error = data.get("error")
        if error:
            errors[str(error.get("category", "env"))] += 1
            continue
        reward = data.get("reward")
        if reward is None:
            continue
        rewards.append(float(reward))
        for metric, value in (data.get("metrics") or {}).items():
            metric_sums[metric] += float(value)
            metric_counts[metric] += 1
        ex = per_example[int(data["example_id"])]
        ex[0] += 1
        ex[1] += reward >= PASS_THRESHOLD
    n = len(rewards)
    out.scored_count = n
    if n:
        mean = sum(rewards) / n
        out.avg_reward = mean
        out.std_reward = math.sqrt(max(0.0, sum(r * r for r in rewards) / n - mean * mean))
        if n > 1:
            sample_var = max(0.0, sum((r - mean) ** 2 for r in rewards) / (n - 1))
            out.reward_ci95 = Z95 * math.sqrt(sample_var / n)
    for k in ks_for(rollouts_per_example):
        vals = [pass_at_k(seen, good, k) for seen, good in per_example.values() if seen >= k]
        if vals:
            out.pass_at_k[str(k)] = sum(vals) / len(vals)
    out.avg_metrics = {m: metric_sums[m] / metric_counts[m] for m in sorted(metric_sums)}
    out.error_counts = dict(sorted(errors.items()))
    return out


def wilson_lower_bound(mean: float, n: int, z: float = Z95) -> float:
    """The lower end of the Wilson score interval for a mean ``mean`` of ``n`` rewards in [0, 1].

    It takes the largest variance a reward in [0, 1] with that mean can have (a pass/fail reward's), so
    it stays honest where the sample's own spread says nothing: one rollout at 1.0 gets 0.21, five at
    1.0 get 0.57, while a normal interval would give both a width of 0."""
    p = min(1.0, max(0.0, mean))
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre - margin) / (1 + z2 / n)


def ranking_bound(avg_reward: float | None, scored_count: int, reward_ci95: float | None) -> float | None:
    """What the leaderboard ranks a run by: the lower end of a 95% interval of its mean reward — Wilson's
    (``wilson_lower_bound``) when the mean lies in [0, 1], the normal interval's (``avg_reward -
    reward_ci95``) for rewards on another scale. None (ranked last) without scored rollouts, or without an
    interval (one rollout on another scale)."""
    if avg_reward is None or scored_count < 1:
        return None
    if 0.0 <= avg_reward <= 1.0:
        return wilson_lower_bound(avg_reward, scored_count)
    return avg_reward - reward_ci95 if reward_ci95 is not None else None
