"""How many rollouts may be in flight: a fixed cap, or one that adapts to the endpoint (AIMD).

``max_concurrent`` is an ``int`` (a fixed cap), ``"auto"`` (adaptive between ``AUTO_FLOOR`` and
``AUTO_CEILING``) or a ``(floor, ceiling)`` pair (``"FLOOR:CEIL"`` on the command line).

The adaptive cap is TCP's congestion control applied to rollouts, as Inspect AI adapts its connection
limit: it starts at the floor and grows by one per finished rollout (slow start, so it doubles every
round trip) until the endpoint first pushes back; from then on it grows by one per round trip (additive
increase). Push-back is a 429, a 503 or a timed-out request, seen by the client as it retries
(``Client.add_throttle_listener``); each halves the cap (multiplicative decrease), at most once per
round trip: a signal from a request sent before the last decrease is the old cap's, and ignored.
Rollouts already in flight are never cancelled; a lower cap only holds new ones back.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, TypeAlias

#: What callers may pass as ``max_concurrent``.
MaxConcurrent: TypeAlias = int | str | tuple[int, int]
AUTO = "auto"
AUTO_FLOOR = 8
AUTO_CEILING = 1024
#: The factor of a multiplicative decrease.
DECREASE = 0.5
#: Cap changes kept in ``AdaptiveLimit.history``.
HISTORY_MAX = 10_000


@dataclass(frozen=True, slots=True)
class ConcurrencySpec:
    """A parsed ``max_concurrent``: fixed when ``floor == ceiling`` and not ``adaptive``."""

    floor: int
    ceiling: int
    adaptive: bool

    @property
    def fixed(self) -> int | None:
        return None if self.adaptive else self.ceiling

    def describe(self) -> str:
        return f"auto {self.floor}..{self.ceiling}" if self.adaptive else str(self.ceiling)


def parse_max_concurrent(value: Any) -> ConcurrencySpec:
    """``value`` as a ``ConcurrencySpec``; raises ``ValueError`` saying what is accepted."""
    accepted = 'a positive integer, "auto", or a floor:ceiling pair such as "4:256"'
    if isinstance(value, ConcurrencySpec):
        return value
    if isinstance(value, bool):
        raise ValueError(f"max_concurrent must be {accepted}, not {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError("max_concurrent must be at least 1")
        return ConcurrencySpec(value, value, adaptive=False)
    pair: tuple[Any, ...] | None = None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == AUTO:
            return ConcurrencySpec(AUTO_FLOOR, AUTO_CEILING, adaptive=True)
        if text.isdigit():
            return parse_max_concurrent(int(text))
        if text.count(":") == 1:
            pair = tuple(text.split(":"))
    elif isinstance(value, tuple | list) and len(value) == 2:
        pair = tuple(value)
    if pair is not None:
        try:
            floor, ceiling = (int(x) for x in pair)
        except (TypeError, ValueError):
            raise ValueError(f"max_concurrent must be {accepted}, not {value!r}") from None
        if not 1 <= floor <= ceiling:
            raise ValueError(f"max_concurrent {value!r}: need 1 <= floor <= ceiling")
        return ConcurrencySpec(floor, ceiling, adaptive=True)
    raise ValueError(f"max_concurrent must be {accepted}, not {value!r}")


class _Slots:
    """Slots handed out in FIFO order, O(1) per acquire and release (``asyncio.Semaphore.locked()`` scans
    every waiter on Python 3.11, which at 4,096 waiting rollouts was a tenth of a run's CPU time)."""

    _limit: float

    def __init__(self) -> None:
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def limit(self) -> int:
        return int(self._limit)

    async def acquire(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._release_slot()  # woken and cancelled at once: pass the slot on
            elif fut in self._waiters:
                self._waiters.remove(fut)
            raise

    def _release_slot(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)


class AdaptiveLimit(_Slots):
    """An AIMD cap on rollouts in flight, used like a semaphore (``acquire`` / ``release``).

    ``throttled(sent_at)`` is the push-back signal (``sent_at``: ``time.monotonic()`` when the throttled
    request was sent). ``history`` keeps (time, cap) at every change, for metadata and tests."""

    def __init__(self, floor: int, ceiling: int, *, start: int | None = None) -> None:
        if not 1 <= floor <= ceiling:
            raise ValueError("need 1 <= floor <= ceiling")
        super().__init__()
        self.floor, self.ceiling = floor, ceiling
        self._limit = float(min(max(start or floor, floor), ceiling))
        self.slow_start = True
        self.decreases = 0
        self.throttle_signals = 0
        self.min_seen = self.max_seen = self.limit
        self._last_decrease = float("-inf")
        self.history: list[tuple[float, int]] = [(time.monotonic(), self.limit)]

    def release(self) -> None:
        bound = self.in_flight >= self.limit or bool(self._waiters)
        if bound:  # grow only while the cap is what holds rollouts back
            step = 1.0 if self.slow_start else 1.0 / max(1.0, self._limit)
            self._set(min(float(self.ceiling), self._limit + step))
        self._release_slot()

    def throttled(self, sent_at: float) -> None:
        self.throttle_signals += 1
        if sent_at < self._last_decrease:
            return  # sent under the old cap: that cap was already cut
        self.slow_start = False
        self.decreases += 1
        self._last_decrease = time.monotonic()
        self._set(max(float(self.floor), float(int(self._limit * DECREASE))))

    def _set(self, value: float) -> None:
        before = self.limit
        self._limit = value
        now = self.limit
        if now != before:
            self.min_seen, self.max_seen = min(self.min_seen, now), max(self.max_seen, now)
            self.history.append((time.monotonic(), now))
            if len(self.history) > HISTORY_MAX:
                del self.history[: HISTORY_MAX // 2]  # a long run keeps its recent course
            self._wake()

    def summary(self) -> dict[str, Any]:
        """What run metadata records (``extra["concurrency"]``)."""
        return {
            "mode": AUTO,
            "floor": self.floor,
            "ceiling": self.ceiling,
            "final": self.limit,
            "min": self.min_seen,
            "max": self.max_seen,
            "decreases": self.decreases,
            "throttle_signals": self.throttle_signals,
        }


class FixedLimit(_Slots):
    """A fixed cap with ``AdaptiveLimit``'s interface."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("max_concurrent must be at least 1")
        super().__init__()
        self._limit = float(limit)

    def release(self) -> None:
        self._release_slot()

    def throttled(self, sent_at: float) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        return {"mode": "fixed", "final": self.limit}


Limit: TypeAlias = AdaptiveLimit | FixedLimit


def make_limit(spec: MaxConcurrent | ConcurrencySpec) -> Limit:
    parsed = parse_max_concurrent(spec)
    if parsed.fixed is not None:
        return FixedLimit(parsed.fixed)
    return AdaptiveLimit(parsed.floor, parsed.ceiling)


__all__ = [
    "AUTO",
    "AUTO_CEILING",
    "AUTO_FLOOR",
    "AdaptiveLimit",
    "ConcurrencySpec",
    "FixedLimit",
    "Limit",
    "MaxConcurrent",
    "make_limit",
    "parse_max_concurrent",
]
