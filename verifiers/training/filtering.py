"""Online difficulty filtering: which prompts to sample next and which finished groups to train on.

Every finished group updates its prompt's **solve rate** (the group's mean reward) and moves the prompt
into a pool: ``easy`` (solve rate >= ``easy_threshold``), ``hard`` (<= ``hard_threshold``) or ``normal``.
Then:

- a group whose rewards are all equal is **dropped** (``observe`` returns ``False``): its group-relative
  advantages are all 0, so it would spend a training slot on no gradient;
- an ``easy`` prompt with pass rate 1 (every rollout reached ``solved_reward``) is **retired**: never
  sampled again;
- ``sample(n)`` draws prompts without replacement, ``easy_fraction`` / ``hard_fraction`` of them from the
  easy / hard pools and the rest from the normal pool (a short pool's deficit is made up from the others).

This is prime-rl's buffer logic (``easy_threshold``, ``hard_threshold``, ``online_difficulty_filtering``)
without its checkpointing; INTELLECT-3 used it to keep batches informative as prompts got solved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

Pool = Literal["easy", "normal", "hard"]
POOLS: tuple[Pool, ...] = ("easy", "normal", "hard")


def is_informative(rewards: Sequence[float]) -> bool:
    """Whether a group's rewards differ (so its advantages are not all 0)."""
    return len(rewards) > 1 and max(rewards) != min(rewards)


class DifficultyPools:
    """Solve-rate pools over a fixed set of example ids (see the module docstring). Not thread-safe: one
    training loop owns it."""

    def __init__(
        self,
        example_ids: Iterable[int],
        *,
        easy_threshold: float | None = 1.0,
        hard_threshold: float | None = 0.0,
        easy_fraction: float = 0.0,
        hard_fraction: float = 0.0,
        solved_reward: float = 1.0,
        drop_uniform_groups: bool = True,
        retire_solved: bool = True,
        seed: int | None = None,
    ) -> None:
        if easy_threshold is not None and hard_threshold is not None and easy_threshold <= hard_threshold:
            raise ValueError(
                f"easy_threshold ({easy_threshold}) must be above hard_threshold ({hard_threshold})"
            )
        if not (0 <= easy_fraction <= 1 and 0 <= hard_fraction <= 1 and easy_fraction + hard_fraction <= 1):
            raise ValueError("easy_fraction and hard_fraction must lie in [0, 1] and sum to at most 1")
        self._pool: dict[int, Pool] = dict.fromkeys(example_ids, "normal")
        if not self._pool:
            raise ValueError("DifficultyPools needs at least one example id")
        self.easy_threshold, self.hard_threshold = easy_threshold, hard_threshold
        self.easy_fraction, self.hard_fraction = easy_fraction, hard_fraction
        self.solved_reward = solved_reward
        self.drop_uniform_groups, self.retire_solved = drop_uniform_groups, retire_solved
        self._rng = np.random.default_rng(seed)
        self._solve_rate: dict[int, float] = {}
        self._retired: set[int] = set()
        self._dropped_groups = 0
        self._observed_groups = 0

    # --- state ---------------------------------------------------------------------------------------
    def pool(self, example_id: int) -> Pool:
        return self._pool[example_id]

    def solve_rate(self, example_id: int) -> float | None:
        """The last observed solve rate (``None`` before the prompt's first group)."""
        return self._solve_rate.get(example_id)

    @property
    def retired(self) -> frozenset[int]:
        return frozenset(self._retired)

    @property
    def active(self) -> list[int]:
        """Example ids still sampled (not retired)."""
        return [i for i in self._pool if i not in self._retired]

    # --- updates -------------------------------------------------------------------------------------
    def observe(self, example_id: int, rewards: Sequence[float]) -> bool:
        """Record one finished group of ``example_id`` (its scored rewards) and say whether to train on it."""
        if example_id not in self._pool:
            raise KeyError(f"example {example_id} is not in these pools")
        if not rewards:
            raise ValueError(f"group of example {example_id} has no scored rewards")
        rate = float(np.mean(rewards))
        self._solve_rate[example_id] = rate
        if self.easy_threshold is not None and rate >= self.easy_threshold:
            pool: Pool = "easy"
        elif self.hard_threshold is not None and rate <= self.hard_threshold:
            pool = "hard"
        else:
            pool = "normal"
        self._pool[example_id] = pool
        if self.retire_solved and pool == "easy" and min(rewards) >= self.solved_reward:
            self._retired.add(example_id)
        self._observed_groups += 1
        keep = not self.drop_uniform_groups or is_informative(rewards)
        if not keep:
            self._dropped_groups += 1
        return keep

    def sample(self, n: int) -> list[int]:
        """Up to ``n`` distinct active example ids (fewer only when fewer are active)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        by_pool: dict[Pool, list[int]] = {p: [] for p in POOLS}
        for i, p in self._pool.items():
            if i not in self._retired:
                by_pool[p].append(i)
        n_easy, n_hard = int(n * self.easy_fraction), int(n * self.hard_fraction)
        chosen = self._draw(by_pool, "easy", n_easy) + self._draw(by_pool, "hard", n_hard)
        # The normal pool makes up what the easy and hard pools lacked; then the others fill its own gap.
        chosen += self._draw(by_pool, "normal", n - len(chosen))
        chosen += self._draw(by_pool, "hard", n - len(chosen))
        chosen += self._draw(by_pool, "easy", n - len(chosen))
        return chosen

    def _draw(self, by_pool: dict[Pool, list[int]], pool: Pool, k: int) -> list[int]:
        """``k`` ids (or all there are) drawn without replacement from ``by_pool[pool]``, removed from it."""
        ids = by_pool[pool]
        k = min(k, len(ids))
        if k <= 0:
            return []
        picked = set(self._rng.choice(len(ids), size=k, replace=False).tolist())
        by_pool[pool] = [x for j, x in enumerate(ids) if j not in picked]
        return [x for j, x in enumerate(ids) if j in picked]

    def metrics(self) -> dict[str, float]:
        """Pool fractions (over active prompts), retired prompts, and the fraction of groups dropped as
        uniform since the last call (which resets that counter)."""
        active = self.active
        total = max(len(active), 1)
        out = {f"pool/{p}": sum(1 for i in active if self._pool[i] == p) / total for p in POOLS}
        out["retired"] = float(len(self._retired))
        out["dropped_uniform"] = self._dropped_groups / max(self._observed_groups, 1)
        self._dropped_groups = self._observed_groups = 0
        return out


__all__ = ["POOLS", "DifficultyPools", "Pool", "is_informative"]
