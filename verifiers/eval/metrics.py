"""Run-level statistics: running aggregates over rollout results (pass@k by ``verifiers.hub.wire.pass_at_k``,
the one definition the hub reports too), and the rubric's run-level metrics (``RunMetric``)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifiers.hub.wire import ks_for, pass_at_k
from verifiers.types import RunCounts, RunMetadata, Usage

if TYPE_CHECKING:
    from verifiers.rubrics.rubric import RunMetric

__all__ = ["RunAggregate", "ks_for", "pass_at_k"]


@dataclass
class RunAggregate:
    """Incrementally folds rollout records into the numbers of ``metadata.json``."""

    pass_threshold: float = 1.0
    completed: int = 0
    scored: int = 0
    errored: dict[str, int] = field(default_factory=dict)
    reward_sum: float = 0.0
    reward_sq_sum: float = 0.0
    metric_sums: dict[str, float] = field(default_factory=dict)
    metric_counts: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # example_id -> [scored rollouts, correct rollouts]
    per_example: dict[int, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    #: The environment's run-level metrics, and the values each has collected (one tuple per rollout).
    run_metrics: Sequence[RunMetric] = ()
    run_values: dict[str, list[tuple[float, ...]]] = field(default_factory=dict)

    def add(self, record: Mapping[str, Any]) -> None:
        self.completed += 1
        usage = record.get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        err = record.get("error")
        if err is not None:
            cat = err.get("category", "env")
            self.errored[cat] = self.errored.get(cat, 0) + 1
            return
        reward = record.get("reward")
        if reward is None:
            return
        self.scored += 1
        self.reward_sum += reward
        self.reward_sq_sum += reward * reward
        metrics = record.get("metrics") or {}
        for name, value in metrics.items():
            self.metric_sums[name] = self.metric_sums.get(name, 0.0) + float(value)
            self.metric_counts[name] = self.metric_counts.get(name, 0) + 1
        for metric in self.run_metrics:
            if all(k in metrics for k in metric.keys):
                self.run_values.setdefault(metric.name, []).append(
                    tuple(float(metrics[k]) for k in metric.keys)
                )
        ex = self.per_example[int(record["example_id"])]
        ex[0] += 1
        if reward >= self.pass_threshold:
            ex[1] += 1

    def add_all(self, records: Iterable[Mapping[str, Any]]) -> None:
        for r in records:
            self.add(r)

    @property
    def avg_reward(self) -> float | None:
        return self.reward_sum / self.scored if self.scored else None

    @property
    def std_reward(self) -> float | None:
        if not self.scored:
            return None
        mean = self.reward_sum / self.scored
        return math.sqrt(max(0.0, self.reward_sq_sum / self.scored - mean * mean))

    @property
    def avg_metrics(self) -> dict[str, float]:
        return {k: self.metric_sums[k] / self.metric_counts[k] for k in sorted(self.metric_sums)}

    def pass_at_k(self, rollouts_per_example: int) -> dict[str, float]:
        out: dict[str, float] = {}
        for k in ks_for(rollouts_per_example):
            vals = [pass_at_k(n, c, k) for n, c in self.per_example.values() if n >= k]
            if vals:
                out[str(k)] = sum(vals) / len(vals)
        return out

    def run_metric_values(self) -> dict[str, float]:
        """Each run-level metric's value over the rollouts so far (absent while it has too few)."""
        out: dict[str, float] = {}
        for metric in self.run_metrics:
            value = metric.fn(self.run_values.get(metric.name, []))
            if value is not None:
                out[metric.name] = float(value)
        return out

    def fill(self, meta: RunMetadata) -> None:
        """Write the aggregates into ``meta`` (counts, reward mean/std, metrics, run-level metrics, pass@k,
        usage)."""
        meta.counts = RunCounts(
            planned=meta.counts.planned,
            completed=self.completed,
            scored=self.scored,
            errored=dict(self.errored),
        )
        meta.avg_reward = self.avg_reward
        meta.std_reward = self.std_reward
        meta.avg_metrics = self.avg_metrics
        meta.run_metrics = self.run_metric_values()
        meta.pass_at_k = self.pass_at_k(meta.rollouts_per_example)
        meta.usage = Usage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
