"""Helpers for ranges of calendar dates."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta


@dataclass(frozen=True)
class DateRange:
    """The dates ``start <= d < end`` (``end`` is exclusive, like ``range``)."""

    start: date
    end: date

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"range ends ({self.end}) before it starts ({self.start})")

    def __len__(self) -> int:
        return (self.end - self.start).days

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day < self.end

    def __iter__(self) -> Iterator[date]:
        return self.days()

    def days(self, step: int = 1) -> Iterator[date]:
        if step <= 0:
            raise ValueError("step must be positive")
        current = self.start
        while current < self.end:
            yield current
            current += timedelta(days=step)

    def overlap(self, other: DateRange) -> DateRange | None:
        """The dates both ranges share, or None."""
        start, end = max(self.start, other.start), min(self.end, other.end)
        if start >= end:
            return None
        return DateRange(start, end)

    def business_days(self) -> int:
        """Monday to Friday dates in the range."""
        return sum(1 for d in self.days() if d.weekday() < 5)

    def split_by_month(self) -> list[DateRange]:
        """The range cut at every first of a month."""
        parts: list[DateRange] = []
        cursor = self.start
        while cursor < self.end:
            nxt = min(month_end(cursor) + timedelta(days=1), self.end)
            parts.append(DateRange(cursor, nxt))
            cursor = nxt
        return parts


def month_start(day: date) -> date:
    return day.replace(day=1)


def month_end(day: date) -> date:
    """The last date of ``day``'s month."""
    first_of_next = date(day.year, day.month + 1, 1)
    return first_of_next - timedelta(days=1)


def month_range(year: int, month: int) -> DateRange:
    first = date(year, month, 1)
    return DateRange(first, month_end(first) + timedelta(days=1))


def parse_range(text: str) -> DateRange:
    """``2024-01-05..2024-02-01`` (end exclusive)."""
    left, sep, right = text.partition("..")
    if not sep:
        raise ValueError(f"expected START..END, got {text!r}")
    return DateRange(date.fromisoformat(left.strip()), date.fromisoformat(right.strip()))
