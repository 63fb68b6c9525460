"""Question sources of science-env: the bundled sample, INTELLECT-3's RL science data
(``PrimeIntellect/INTELLECT-3-RL``, subset ``science``) or a local ``.jsonl`` / ``.parquet`` file.

Every source goes through the same steps: records → optional solve-rate filter → rows converted on
access (the instruction and the question as the prompt, ``answer``, ``info`` with the other fields).
``example_id`` is the record's position in its source, so it does not move when a filter changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

SAMPLE = "sample"
INTELLECT3 = "intellect3"
_INTELLECT3_ALIASES = {"intellect3", "intellect-3"}
HF_DATASET = "PrimeIntellect/INTELLECT-3-RL"
HF_SUBSET = "science"
DEFAULT_SOLVE_RATE_COLUMN = "avg@8_qwen3_4b_thinking_2507"


def _decode(value: Any) -> Any:
    """Hub datasets often store nested structures as JSON strings."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {"raw": value}
    return value


def to_row(
    record: Mapping[str, Any], index: int, *, question_key: str, answer_key: str, instruction: str
) -> dict[str, Any]:
    """One dataset row (contract 3.2) from a source record."""
    question, answer = record.get(question_key), record.get(answer_key)
    if question is None or answer is None:
        raise ValueError(
            f"record {index} has no {question_key!r} or {answer_key!r} field (fields: {sorted(record)}); "
            "set question_key / answer_key"
        )
    info = _decode(record.get("info")) or {}
    info = dict(info) if isinstance(info, Mapping) else {"raw": info}
    for key, value in record.items():
        if key not in (question_key, answer_key, "info", "prompt"):
            info.setdefault(key, value)
    info["question"] = str(question)  # the bare question, for judges (the prompt adds the instruction)
    text = f"{instruction}\n\n{question}" if instruction else str(question)
    return {"example_id": index, "question": text, "answer": str(answer), "info": info, "task": "science"}


class ConvertedRows:
    """Records converted to rows on access, so a large hub dataset is never converted all at once."""

    def __init__(
        self,
        records: Any,
        indices: Sequence[int] | None,
        convert: Callable[[Mapping[str, Any], int], dict[str, Any]],
    ) -> None:
        self._records = records
        self._indices = indices
        self._convert = convert

    def __len__(self) -> int:
        return len(self._indices) if self._indices is not None else len(self._records)

    def __getitem__(self, position: int) -> dict[str, Any]:
        index = self._indices[position] if self._indices is not None else position
        return self._convert(self._records[index], index)


def column(records: Any, name: str) -> list[Any]:
    """The values of one column, from a ``datasets.Dataset`` (columnar access) or a list of dicts."""
    names = getattr(records, "column_names", None)
    if names is not None:
        if name not in names:
            raise ValueError(f"the dataset has no column {name!r} (columns: {sorted(names)})")
        return list(records[name])
    values = [r.get(name) for r in records]
    if values and all(v is None for v in values):
        raise ValueError(f"no record has the field {name!r}")
    return values


def solve_rate_indices(
    records: Any, column_name: str, min_rate: float | None, max_rate: float | None
) -> list[int] | None:
    """Positions of records whose solve rate lies in ``[min_rate, max_rate]`` (``None``: no filter).
    Records without a solve rate are dropped when a bound is set."""
    if min_rate is None and max_rate is None:
        return None
    lo = -float("inf") if min_rate is None else float(min_rate)
    hi = float("inf") if max_rate is None else float(max_rate)
    if lo > hi:
        raise ValueError(f"min_solve_rate ({min_rate}) is above max_solve_rate ({max_rate})")
    return [
        i
        for i, value in enumerate(column(records, column_name))
        if value is not None and lo <= float(value) <= hi
    ]


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled questions (``info``: ``domain``, ``answer_type``, ``alternatives``, ``aliases``)."""
    text = resources.files("science_env").joinpath("data", "sample.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def read_local(path: Path) -> list[dict[str, Any]]:
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
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("reading .parquet files needs pyarrow: pip install 'science-env[data]'") from exc
    return pq.read_table(path).to_pylist()


def hub_records(split: str) -> Any:
    """INTELLECT-3's RL science questions via ``datasets`` (downloads on first use; online only)."""
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            "source='intellect3' needs the `datasets` package: pip install 'science-env[data]'"
        ) from exc
    return datasets.load_dataset(HF_DATASET, HF_SUBSET, split=split)


def builder(
    source: str,
    *,
    question_key: str = "question",
    answer_key: str = "answer",
    instruction: str = "",
    split: str = "train",
    num_examples: int = -1,
    solve_rate_column: str = DEFAULT_SOLVE_RATE_COLUMN,
    min_solve_rate: float | None = None,
    max_solve_rate: float | None = None,
) -> Callable[[], ConvertedRows]:
    """A dataset builder for ``Environment(eval_dataset=...)``: nothing is read until rows are needed.
    Arguments are checked eagerly, so a bad ``source`` fails at ``load_environment``."""
    kind = _source_kind(source)
    if kind == SAMPLE and (min_solve_rate is not None or max_solve_rate is not None):
        raise ValueError("source='sample' has no solve-rate column to filter on")

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        return to_row(
            record, index, question_key=question_key, answer_key=answer_key, instruction=instruction
        )

    def build() -> ConvertedRows:
        if kind == SAMPLE:
            records: Any = sample_records()
        elif kind == INTELLECT3:
            records = hub_records(split)
        else:
            records = read_local(Path(source).expanduser())
        indices = solve_rate_indices(records, solve_rate_column, min_solve_rate, max_solve_rate)
        if num_examples >= 0:
            indices = (list(range(len(records))) if indices is None else indices)[:num_examples]
        return ConvertedRows(records, indices, convert)

    return build


def _source_kind(source: str) -> str:
    if source == SAMPLE:
        return SAMPLE
    if source.lower() in _INTELLECT3_ALIASES:
        return INTELLECT3
    path = Path(source).expanduser()
    if path.suffix in (".jsonl", ".parquet") and path.is_file():
        return "file"
    raise ValueError(
        f"source must be {SAMPLE!r}, {INTELLECT3!r} or the path of an existing .jsonl or .parquet file, "
        f"not {source!r}"
    )
