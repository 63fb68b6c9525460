"""A set of integers stored as sorted, disjoint half-open intervals ``[start, end)``."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator


class IntervalSet:
    """Sorted, non-overlapping half-open intervals; touching intervals are merged."""

    def __init__(self, intervals: Iterable[tuple[int, int]] = ()) -> None:
        self._spans: list[tuple[int, int]] = []
        for start, end in intervals:
            self.add(start, end)

    def add(self, start: int, end: int) -> None:
        """Insert ``[start, end)``, merging it with every interval it overlaps or touches."""
        if start > end:
            raise ValueError(f"start {start} is after end {end}")
        if start == end:
            return
        merged: list[tuple[int, int]] = []
        placed = False
        for s, e in self._spans:
            if e <= start:
                merged.append((s, e))
            elif s >= end:
                if not placed:
                    merged.append((start, end))
                    placed = True
                merged.append((s, e))
            else:
                start, end = min(s, start), max(e, end)
        if not placed:
            merged.append((start, end))
        merged.sort()
        self._spans = merged

    def remove(self, start: int, end: int) -> None:
        """Remove ``[start, end)`` from the set, splitting intervals where needed."""
        if start >= end:
            return
        kept: list[tuple[int, int]] = []
        for s, e in self._spans:
            if e <= start or s >= end:
                kept.append((s, e))
                continue
            if s < start:
                kept.append((s, start))
            if e > end:
                kept.append((end, e))
        self._spans = kept

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        i = bisect_left(self._spans, (value + 1,)) - 1
        return i >= 0 and self._spans[i][0] <= value < self._spans[i][1]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def total(self) -> int:
        """How many integers the set holds."""
        return sum(e - s for s, e in self._spans)

    def overlaps(self, start: int, end: int) -> bool:
        """Whether any integer of ``[start, end)`` is in the set."""
        return any(s < end and start < e for s, e in self._spans)

    def gaps(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` that are not in the set."""
        out: list[tuple[int, int]] = []
        cursor = start
        for s, e in self._spans:
            if e <= cursor:
                continue
            if s >= end:
                break
            if s > cursor:
                out.append((cursor, s))
            cursor = max(cursor, e)
        if cursor < end:
            out.append((cursor, end))
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"[{s}, {e})" for s, e in self._spans)
        return f"IntervalSet({inner})"
