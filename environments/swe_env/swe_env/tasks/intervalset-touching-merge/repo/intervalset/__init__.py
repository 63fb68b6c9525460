"""Integer interval sets."""

from intervalset.core import IntervalSet

__all__ = ["IntervalSet"]
