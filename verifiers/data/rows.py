"""``Rows``, the one lazy row type: a dataset built on first use whose records become rows on access.

An environment's ``dataset`` (a list of dicts, a Hugging Face ``Dataset``, an iterable or a zero-argument
builder of one) is held as ``Rows``; problem sources return ``Rows`` too, with a ``convert`` step and a
``subset`` of the records, so a large hub dataset is never converted (or held) at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing verifiers.data stays free of pydantic
    from verifiers.types import DatasetRecord


@runtime_checkable
class RowSource(Protocol):
    """Anything indexable with a length whose items are mappings (a list of dicts, a HF ``Dataset``)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...


DatasetLike: TypeAlias = RowSource | Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]]
DatasetBuilder: TypeAlias = Callable[[], DatasetLike]
#: ``convert(record, index)`` turns a source record into a row; ``index`` is the record's position in its
#: source, which makes a stable ``example_id`` that does not move when a filter changes.
RowConverter: TypeAlias = Callable[[Mapping[str, Any], int], Mapping[str, Any]]


class Rows:
    """Dataset rows, built lazily: the builder runs on first use (never at construction) and each record is
    converted when it is read (never cached, never all at once).

    ``convert`` (optional) maps a record and its source position to a row; ``subset`` selects and orders
    the source's records (``None``: all of them); ``provenance`` says which pinned data they are
    (``verifiers.data.benchmark``).
    """

    def __init__(
        self,
        source: DatasetLike | DatasetBuilder,
        convert: RowConverter | None = None,
        *,
        subset: Sequence[int] | None = None,
        provenance: DatasetRecord | None = None,
    ) -> None:
        self._source = source
        self._convert = convert
        self._subset = subset
        self._provenance = provenance
        self._built: RowSource | None = None

    @property
    def provenance(self) -> DatasetRecord | None:
        """The ``DatasetRecord`` of these rows: their own, or that of the ``Rows`` a builder returned (which
        builds them); ``None`` for data that was not loaded through ``verifiers.data.benchmark``."""
        if self._provenance is not None:
            return self._provenance
        built = self._records()
        return built.provenance if isinstance(built, Rows) else None

    def _records(self) -> RowSource:
        if self._built is None:
            src = self._source
            if callable(src) and not isinstance(src, RowSource):
                src = src()
            if not isinstance(src, RowSource):
                src = list(src)  # a generator or other iterable
            self._built = src
        return self._built

    def __len__(self) -> int:
        return len(self._subset) if self._subset is not None else len(self._records())

    def __getitem__(self, position: int) -> Mapping[str, Any]:
        index = self._subset[position] if self._subset is not None else position
        item = self._records()[index]
        if self._convert is not None:
            item = self._convert(item, index)
        if not isinstance(item, Mapping):
            raise TypeError(f"dataset row {position} is a {type(item).__name__}, expected a mapping")
        return item

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (self[i] for i in range(len(self)))

    def indices(self, num_examples: int = -1, *, seed: int | None = None, shuffle: bool = False) -> list[int]:
        """Row positions for a run: the first ``num_examples`` (all when < 0), in a seeded order if shuffled.

        The result depends only on (number of rows, num_examples, seed, shuffle): resume relies on it.
        """
        order = list(range(len(self)))
        if shuffle:
            random.Random(seed if seed is not None else 0).shuffle(order)
        if num_examples is not None and num_examples >= 0:
            order = order[:num_examples]
        return order
