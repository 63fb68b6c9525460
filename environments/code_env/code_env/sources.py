"""Problem sources: the bundled sample, a local JSONL file, or ``PrimeIntellect/INTELLECT-3-RL`` (code).

Every source yields the same dataset rows: the prompt (instruction + problem statement) as ``question``
and the tests, already cut down to at most ``max_tests``, in ``info["tests"]``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from code_env.scoring import ProblemTests

INSTRUCTION = "Solve the programming task below in a Python markdown code block."
HF_DATASET = "PrimeIntellect/INTELLECT-3-RL"
HF_SUBSET = "code"
#: ``source=`` values that are not paths.
SAMPLE = "sample"
INTELLECT3 = "intellect-3"


def _decode(value: Any) -> Any:
    """Hub datasets store nested structures as JSON strings (one Arrow type for every row)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _sample_tests(tests: ProblemTests, max_tests: int, rng_key: str) -> ProblemTests:
    if len(tests) <= max_tests:
        return tests
    keep = sorted(random.Random(rng_key).sample(range(len(tests)), max_tests))
    return ProblemTests(
        fn_name=tests.fn_name,
        inputs=[tests.inputs[i] for i in keep],
        outputs=[tests.outputs[i] for i in keep],
    )


def to_row(record: Mapping[str, Any], index: int, *, max_tests: int, seed: int) -> dict[str, Any]:
    """One dataset row from a problem record in either accepted shape:

    - the local format: ``{"question": str, "tests": {"fn_name", "inputs", "outputs"}}``;
    - INTELLECT-3-RL's: ``{"question": str, "info": {"tests": ...}}`` where ``info`` and ``tests`` may be
      JSON strings.

    Other keys of the record (``id``, ``title``, ``source``…) are kept in ``info``; ``reference`` and
    ``wrong`` solutions (the bundled sample's) are not, so a model never sees them.
    """
    info = _decode(record.get("info")) or {}
    if not isinstance(info, Mapping):
        info = {}
    raw_tests = _decode(record.get("tests", info.get("tests")))
    if not isinstance(raw_tests, Mapping):
        raise ValueError(f"problem {index} has no tests (expected a 'tests' object)")
    tests = ProblemTests.model_validate(
        {**raw_tests, "fn_name": raw_tests.get("fn_name") or info.get("fn_name") or None}
    )
    tests = _sample_tests(tests, max_tests, f"{seed}:{index}")
    extra = {k: v for k, v in info.items() if k != "tests"}
    extra.update({k: record[k] for k in ("id", "title", "source") if k in record})
    return {
        "example_id": index,
        "question": f"{INSTRUCTION}\n\n{record['question']}",
        "answer": "",
        "info": {**extra, "tests": tests.model_dump()},
        "task": "code",
    }


class _Converted:
    """Rows converted on access, so a large hub dataset is never converted (or held) all at once."""

    def __init__(self, records: Any, convert: Callable[[Mapping[str, Any], int], dict[str, Any]]) -> None:
        self._records = records
        self._convert = convert

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self._convert(self._records[index], index)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{lineno}: not valid JSON ({exc})") from None
    return records


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled problems, each with its ``reference`` and ``wrong`` solution."""
    text = resources.files("code_env").joinpath("data").joinpath("sample.jsonl").read_text(encoding="utf-8")
    return tuple(json.loads(line) for line in text.splitlines() if line.strip())


def _hub_records(split: str) -> Any:
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise ImportError(
            "source='intellect-3' needs the `datasets` package: pip install 'verifiers-sdk[data]'"
        ) from exc
    return load_dataset(HF_DATASET, HF_SUBSET, split=split)


def check_source(source: str) -> None:
    """Fail early (at load time, not mid-run) on a ``source`` that names nothing."""
    if source in (SAMPLE, INTELLECT3):
        return
    path = Path(source).expanduser()
    if path.suffix != ".jsonl" or not path.is_file():
        raise ValueError(
            f"source must be {SAMPLE!r}, {INTELLECT3!r} or the path of an existing .jsonl file, not {source!r}"
        )


def dataset_builder(
    source: str, *, max_tests: int, seed: int, split: str = "train"
) -> Callable[[], _Converted]:
    """A builder for ``Environment(eval_dataset=...)``: nothing is read until the rows are needed."""

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        return to_row(record, index, max_tests=max_tests, seed=seed)

    def build() -> _Converted:
        if source == SAMPLE:
            records: Any = sample_records()
        elif source == INTELLECT3:
            records = _hub_records(split)
        else:
            check_source(source)
            records = read_jsonl(Path(source).expanduser())
        return _Converted(records, convert)

    return build
