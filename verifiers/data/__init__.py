"""Dataset rows (contract 3.2) and the problem sources they come from.

- ``rows``: ``Rows``, the one lazy row type (built on first use, records converted on access) and
  ``Rows.indices`` (the rows of a run);
- ``normalize``: ``normalize_row`` / ``build_prompt`` (a raw row made into a contract-3.2 row);
- ``sources``: local files and Hugging Face datasets (INTELLECT-3's RL data by name), what a ``source=``
  argument names;
- ``fields`` / ``filters``: a record's question / answer / info, and solve-rate range filters;
- ``qa``: ``qa_dataset``, the whole path of a question/answer environment's data (source → filter → rows);
- ``benchmark``: published benchmarks' data — a Hugging Face dataset pinned to a commit (row count checked,
  gated access explained) or a local copy in its schema, fingerprinted for ``metadata.json``;
- ``choices``: multiple-choice letters and the seeded option shuffle a re-score reproduces.

Every name is imported on first access (docs/architecture.md); no module imports ``datasets`` or
``pyarrow`` before a source needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "PinnedDataset": "verifiers.data.benchmark",
    "benchmark_qa": "verifiers.data.benchmark",
    "benchmark_rows": "verifiers.data.benchmark",
    "check_row_count": "verifiers.data.benchmark",
    "load_pinned": "verifiers.data.benchmark",
    "row_fingerprint": "verifiers.data.benchmark",
    "ShuffledChoices": "verifiers.data.choices",
    "choice_order": "verifiers.data.choices",
    "format_choices": "verifiers.data.choices",
    "letters_for": "verifiers.data.choices",
    "shuffle_choices": "verifiers.data.choices",
    "decode_json": "verifiers.data.fields",
    "qa_fields": "verifiers.data.fields",
    "column": "verifiers.data.filters",
    "range_indices": "verifiers.data.filters",
    "rows_in_range": "verifiers.data.filters",
    "build_prompt": "verifiers.data.normalize",
    "normalize_row": "verifiers.data.normalize",
    "qa_dataset": "verifiers.data.qa",
    "DatasetBuilder": "verifiers.data.rows",
    "DatasetLike": "verifiers.data.rows",
    "RowConverter": "verifiers.data.rows",
    "RowSource": "verifiers.data.rows",
    "Rows": "verifiers.data.rows",
    "INTELLECT3": "verifiers.data.sources",
    "INTELLECT3_DATASET": "verifiers.data.sources",
    "LOCAL_SUFFIXES": "verifiers.data.sources",
    "hf_records": "verifiers.data.sources",
    "is_intellect3": "verifiers.data.sources",
    "local_path": "verifiers.data.sources",
    "read_records": "verifiers.data.sources",
    "source_kind": "verifiers.data.sources",
    "source_records": "verifiers.data.sources",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.data.benchmark import (
        PinnedDataset as PinnedDataset,
        benchmark_qa as benchmark_qa,
        benchmark_rows as benchmark_rows,
        check_row_count as check_row_count,
        load_pinned as load_pinned,
        row_fingerprint as row_fingerprint,
    )
    from verifiers.data.choices import (
        ShuffledChoices as ShuffledChoices,
        choice_order as choice_order,
        format_choices as format_choices,
        letters_for as letters_for,
        shuffle_choices as shuffle_choices,
    )
    from verifiers.data.fields import decode_json as decode_json, qa_fields as qa_fields
    from verifiers.data.filters import (
        column as column,
        range_indices as range_indices,
        rows_in_range as rows_in_range,
    )
    from verifiers.data.normalize import build_prompt as build_prompt, normalize_row as normalize_row
    from verifiers.data.qa import qa_dataset as qa_dataset
    from verifiers.data.rows import (
        DatasetBuilder as DatasetBuilder,
        DatasetLike as DatasetLike,
        RowConverter as RowConverter,
        Rows as Rows,
        RowSource as RowSource,
    )
    from verifiers.data.sources import (
        INTELLECT3 as INTELLECT3,
        INTELLECT3_DATASET as INTELLECT3_DATASET,
        LOCAL_SUFFIXES as LOCAL_SUFFIXES,
        hf_records as hf_records,
        is_intellect3 as is_intellect3,
        local_path as local_path,
        read_records as read_records,
        source_kind as source_kind,
        source_records as source_records,
    )
