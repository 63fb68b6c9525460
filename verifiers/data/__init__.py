"""Dataset rows (contract 3.2) and the problem sources they come from.

- ``rows``: ``Rows``, the one lazy row type (built on first use, records converted on access) and
  ``Rows.indices`` (the rows of a run);
- ``normalize``: ``normalize_row`` / ``build_prompt`` (a raw row made into a contract-3.2 row);
- ``sources``: local files and Hugging Face datasets (INTELLECT-3's RL data by name), what a ``source=``
  argument names;
- ``fields`` / ``filters``: a record's question / answer / info, and solve-rate range filters;
- ``qa``: ``qa_dataset``, the whole path of a question/answer environment's data (source → filter → rows).

Importing this package imports neither ``datasets`` nor ``pyarrow`` (nor pydantic).
"""

from verifiers.data.fields import decode_json, qa_fields
from verifiers.data.filters import column, range_indices, rows_in_range
from verifiers.data.normalize import build_prompt, normalize_row
from verifiers.data.qa import qa_dataset
from verifiers.data.rows import DatasetBuilder, DatasetLike, RowConverter, Rows, RowSource
from verifiers.data.sources import (
    INTELLECT3,
    INTELLECT3_DATASET,
    LOCAL_SUFFIXES,
    hf_records,
    is_intellect3,
    local_path,
    read_records,
    source_kind,
    source_records,
)

__all__ = [
    "INTELLECT3",
    "INTELLECT3_DATASET",
    "LOCAL_SUFFIXES",
    "DatasetBuilder",
    "DatasetLike",
    "RowConverter",
    "RowSource",
    "Rows",
    "build_prompt",
    "column",
    "decode_json",
    "hf_records",
    "is_intellect3",
    "local_path",
    "normalize_row",
    "qa_dataset",
    "qa_fields",
    "range_indices",
    "read_records",
    "rows_in_range",
    "source_kind",
    "source_records",
]
