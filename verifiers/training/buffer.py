"""An off-policy buffer for asynchronous RL: rollouts wait here between the inference side that generated
them and the trainer, and are dropped once the policy that generated them is too old.

Each item carries the **policy step** that generated it (the trainer step whose weights the inference
server held when the rollout was sampled). At trainer step ``s`` an item of policy step ``p`` is ``s - p``
steps off-policy; it is kept while ``s - p <= max_off_policy_steps`` and dropped (counted in ``dropped``)
after. ``max_off_policy_steps=0`` is fully on-policy; INTELLECT-3 ran with 8 (prime-rl's
``max_off_policy_steps``). Items come out oldest first, so they are used before they go stale.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Stamped(Generic[T]):
    """An item (a rollout, or a group of them) and the policy step that generated it."""

    item: T
    policy_step: int

    def off_policy_steps(self, current_step: int) -> int:
        return current_step - self.policy_step


class OffPolicyBuffer(Generic[T]):
    """FIFO of ``Stamped`` items that drops the stale ones (see the module docstring). Not thread-safe:
    use it from one event loop or thread."""

    def __init__(self, max_off_policy_steps: int) -> None:
        if max_off_policy_steps < 0:
            raise ValueError(f"max_off_policy_steps must be >= 0, got {max_off_policy_steps}")
        self.max_off_policy_steps = max_off_policy_steps
        self._items: deque[Stamped[T]] = deque()
        #: Items dropped as stale since the buffer was made.
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T, policy_step: int) -> None:
        self._items.append(Stamped(item, policy_step))

    def is_stale(self, entry: Stamped[T], current_step: int) -> bool:
        return entry.off_policy_steps(current_step) > self.max_off_policy_steps

    def evict_stale(self, current_step: int) -> int:
        """Drop every item too old for ``current_step``; returns how many went."""
        kept = deque(e for e in self._items if not self.is_stale(e, current_step))
        gone = len(self._items) - len(kept)
        self._items = kept
        self.dropped += gone
        return gone

    def take(self, n: int, current_step: int) -> list[Stamped[T]]:
        """Up to ``n`` fresh items, oldest first (stale ones are dropped on the way)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self.evict_stale(current_step)
        return [self._items.popleft() for _ in range(min(n, len(self._items)))]


__all__ = ["OffPolicyBuffer", "Stamped"]
