"""A least-recently-used cache with optional per-entry expiry."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

_MISSING = object()


class LRUCache:
    """At most ``capacity`` entries; reading or writing an entry makes it the most recently used."""

    def __init__(self, capacity: int, *, ttl: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.ttl = ttl
        self._clock = clock
        self._data: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def _expired(self, stamp: float) -> bool:
        return self.ttl is not None and self._clock() - stamp >= self.ttl

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._data.get(key, _MISSING)
        if entry is _MISSING:
            self.misses += 1
            return default
        value, stamp = entry
        if self._expired(stamp):
            del self._data[key]
            self.misses += 1
            return default
        self.hits += 1
        return value

    def put(self, key: Hashable, value: Any) -> None:
        if key in self._data:
            self._data.move_to_end(key)
        self._data[key] = (value, self._clock())
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)
            self.evictions += 1

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        if key in self._data:
            return self._data.pop(key)[0]
        if default is _MISSING:
            raise KeyError(key)
        return default

    def __contains__(self, key: Hashable) -> bool:
        entry = self._data.get(key)
        return entry is not None and not self._expired(entry[1])

    def __len__(self) -> int:
        return len(self._data)

    def keys(self) -> list[Hashable]:
        """Keys from least to most recently used."""
        return list(self._data)

    def clear(self) -> None:
        self._data.clear()


def memoize(capacity: int = 128) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Cache a function's results by its positional arguments."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        cache = LRUCache(capacity)

        def wrapper(*args: Hashable) -> Any:
            result = cache.get(args, _MISSING)
            if result is _MISSING:
                result = fn(*args)
                cache.put(args, result)
            return result

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.__name__ = fn.__name__
        wrapper.__doc__ = fn.__doc__
        return wrapper

    return decorate
