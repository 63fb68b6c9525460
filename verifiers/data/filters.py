"""Static filters over source records (a numeric column such as a solve rate) and the ``Rows`` they keep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verifiers.data.rows import RowConverter, Rows


def column(records: Any, name: str) -> list[Any]:
    """One column's values, from a ``datasets.Dataset`` (columnar access) or a list of dicts."""
    names = getattr(records, "column_names", None)
    if names is not None:
        if name not in names:
            raise ValueError(f"the dataset has no column {name!r} (columns: {sorted(names)})")
        return list(records[name])
    values = [r.get(name) for r in records]
    if values and all(v is None for v in values):
        raise ValueError(f"no record has the field {name!r}")
    return values


def range_indices(records: Any, column_name: str, low: float | None, high: float | None) -> list[int] | None:
    """Positions of records whose ``column_name`` lies in ``[low, high]``; ``None`` when both bounds are
    ``None`` (no filter). Records without a value are dropped when a bound is set. Used for static
    difficulty filtering on solve-rate columns."""
    if low is None and high is None:
        return None
    lo = -float("inf") if low is None else float(low)
    hi = float("inf") if high is None else float(high)
    if lo > hi:
        raise ValueError(f"the lower bound ({low}) is above the upper bound ({high})")
    return [i for i, v in enumerate(column(records, column_name)) if v is not None and lo <= float(v) <= hi]


def rows_in_range(
    records: Any,
    convert: RowConverter,
    *,
    column_name: str | None = None,
    low: float | None = None,
    high: float | None = None,
    limit: int = -1,
) -> Rows:
    """Lazy rows of the records whose ``column_name`` lies in ``[low, high]`` (all when no bound), then
    the first ``limit`` of those (all when negative): filter first, cut second."""
    subset: Sequence[int] | None = None
    if column_name is not None:
        subset = range_indices(records, column_name, low, high)
    if limit >= 0:
        subset = (range(len(records)) if subset is None else subset)[:limit]
    return Rows(records, convert, subset=subset)
