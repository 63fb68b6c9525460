"""Calendar date ranges."""

from daterange.core import DateRange, month_end, month_range, month_start, parse_range

__all__ = ["DateRange", "month_end", "month_range", "month_start", "parse_range"]
