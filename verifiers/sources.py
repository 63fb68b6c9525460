"""Where environments get their problems: local JSONL / JSON / parquet files and Hugging Face datasets
(such as INTELLECT-3's RL data), filtered by a numeric column and converted to rows lazily.

Environments use these through ``vf.sources`` so every environment reads files, names the INTELLECT-3
source and reports a missing optional dependency the same way. Nothing here imports ``datasets`` or
``pyarrow`` until a source that needs it is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: INTELLECT-3's RL training data; subsets ``math``, ``science``, ``logic``, ``code``, …
INTELLECT3_DATASET = "PrimeIntellect/INTELLECT-3-RL"
_INTELLECT3_NAMES = frozenset({"intellect3", "intellect-3"})
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")


def is_intellect3(source: str) -> bool:
    """Whether ``source`` names INTELLECT-3's RL data (``"intellect3"`` or ``"intellect-3"``)."""
    return source.lower() in _INTELLECT3_NAMES


def local_path(source: str, suffixes: Sequence[str] = LOCAL_SUFFIXES) -> Path | None:
    """``source`` as an existing local file with one of ``suffixes``, else ``None``."""
    path = Path(source).expanduser()
    return path if path.suffix in suffixes and path.is_file() else None


def decode_json(value: Any) -> Any:
    """Hub datasets store nested fields (``info``, ``tests``) as JSON strings: decode those; a string that
    is not JSON comes back as ``{"raw": value}``; anything else unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {"raw": value}
    return value


def read_records(path: str | Path, *, install_hint: str = "pip install pyarrow") -> list[dict[str, Any]]:
    """Every record of a local ``.jsonl``, ``.json`` (a list of objects) or ``.parquet`` file."""
    path = Path(path).expanduser()
    if path.suffix == ".jsonl":
        records = []
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except ValueError as exc:
                        raise ValueError(f"{path}:{lineno}: not valid JSON ({exc})") from None
        return records
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # name the file; JSON lines in a .json file is the usual cause
            raise ValueError(
                f"{path}: not valid JSON ({exc}); a .json file holds one list of records, "
                "a .jsonl file one record per line"
            ) from None
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
        return data
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ImportError(f"reading {path.name} needs pyarrow: {install_hint}") from exc
        return list(pq.read_table(path).to_pylist())
    raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(LOCAL_SUFFIXES)}")


def hf_records(
    dataset: str,
    subset: str | None = None,
    *,
    split: str = "train",
    install_hint: str = "pip install datasets",
) -> Any:
    """A Hugging Face dataset split via ``datasets.load_dataset`` (downloads on first use; online only)."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(f"loading {dataset} needs the `datasets` package: {install_hint}") from exc
    return datasets.load_dataset(dataset, subset, split=split)


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


def qa_fields(
    record: Mapping[str, Any], index: int, *, question_key: str = "question", answer_key: str = "answer"
) -> tuple[str, str, dict[str, Any]]:
    """``(question, answer, info)`` of a question/answer record. ``info`` is the record's decoded ``info``
    plus every other field (solve rates, ids, …) and the bare ``question`` (judges want it without the
    environment's instruction). A missing key is an error that names the keys to set."""
    question, answer = record.get(question_key), record.get(answer_key)
    if question is None or answer is None:
        raise ValueError(
            f"record {index} has no {question_key!r} or {answer_key!r} field (fields: {sorted(record)}); "
            "set question_key / answer_key"
        )
    decoded = decode_json(record.get("info")) or {}
    info = dict(decoded) if isinstance(decoded, Mapping) else {"raw": decoded}
    for key, value in record.items():
        if key not in (question_key, answer_key, "info", "prompt"):
            info.setdefault(key, value)
    info["question"] = str(question)
    return str(question), str(answer), info


def select_rows(
    records: Any,
    convert: Callable[[Mapping[str, Any], int], dict[str, Any]],
    *,
    column_name: str | None = None,
    low: float | None = None,
    high: float | None = None,
    limit: int = -1,
) -> LazyRows:
    """Lazy rows of the records whose ``column_name`` lies in ``[low, high]`` (all when no bound), the
    first ``limit`` of them (all when negative)."""
    indices: Sequence[int] | None = None
    if column_name is not None:
        indices = range_indices(records, column_name, low, high)
    if limit >= 0:
        indices = (range(len(records)) if indices is None else indices)[:limit]
    return LazyRows(records, convert, indices)


class LazyRows:
    """Records converted to rows on access, so a large hub dataset is never converted (or held) at once.

    ``indices`` selects and orders records (``None``: all); ``convert(record, index)`` gets the record's
    position in its source, which makes a stable ``example_id`` that does not move when a filter changes.
    """

    def __init__(
        self,
        records: Any,
        convert: Callable[[Mapping[str, Any], int], dict[str, Any]],
        indices: Sequence[int] | None = None,
    ) -> None:
        self._records = records
        self._convert = convert
        self._indices = indices

    def __len__(self) -> int:
        return len(self._indices) if self._indices is not None else len(self._records)

    def __getitem__(self, position: int) -> dict[str, Any]:
        index = self._indices[position] if self._indices is not None else position
        return self._convert(self._records[index], index)
