"""A run's aggregates from its rollouts: mean reward and its spread, pass@k, metrics, errors, usage;
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

from verifiers.hub.wire import Z95, ks_for, pass_at_k, reward_interval

#: A rollout counts as passed for pass@k when its reward reaches this (the SDK's default threshold).
PASS_THRESHOLD = 1.0


@dataclass
class Aggregates:
    rollout_count: int = 0
    scored_count: int = 0
    avg_reward: float | None = None
    std_reward: float | None = None
    #: Half-width of the normal-approximation interval (the deprecated ``reward_ci95`` of the API; stored).
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


def ranking_bound(avg_reward: float | None, scored_count: int, std_reward: float | None) -> float | None:
    """What the leaderboard ranks a run by: the lower end of the 95% interval of its mean reward
    (``wire.reward_interval``, the interval every page and client shows: Wilson's when the mean lies in
    [0, 1], the normal one for rewards on another scale). None (ranked last) without scored rollouts, or
    without an interval (one rollout on another scale)."""
    interval = reward_interval(avg_reward, scored_count, std_reward)
    return interval.low if interval is not None else None
