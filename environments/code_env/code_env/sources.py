"""Problem sources: the bundled sample, a local ``.jsonl`` / ``.json`` / ``.parquet`` file, or
``PrimeIntellect/INTELLECT-3-RL`` (subset ``code``), read through the shared ``vf.data`` helpers.

Every source yields the same dataset rows: the prompt (instruction + problem statement) as ``question``
and the tests, already cut down to at most ``max_tests``, in ``info["tests"]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import verifiers as vf
from code_env.scoring import ProblemTests

INSTRUCTION = "Solve the programming task below in a Python markdown code block."
HF_SUBSET = "code"
#: ``source=`` values that are not paths.
SAMPLE = "sample"
INTELLECT3 = "intellect-3"  # "intellect3" works too (vf.data.is_intellect3)
HUB_INSTALL_HINT = "pip install 'code-env[hub]'"


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
    info = vf.data.decode_json(record.get("info")) or {}
    if not isinstance(info, Mapping):
        info = {}
    raw_tests = vf.data.decode_json(record.get("tests", info.get("tests")))
    # decode_json keeps text that is not JSON as {"raw": text}: no tests either
    if not isinstance(raw_tests, Mapping) or "inputs" not in raw_tests:
        raise ValueError(f"problem {index} has no tests (expected a 'tests' object with inputs and outputs)")
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


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled problems, each with its ``reference`` and ``wrong`` solution."""
    with resources.as_file(resources.files("code_env") / "data" / "sample.jsonl") as path:
        return tuple(vf.data.read_records(path))


def check_source(source: str) -> None:
    """Fail early (at load time, not mid-run) on a ``source`` that names nothing."""
    vf.data.source_kind(source, (SAMPLE, INTELLECT3))


def dataset_builder(
    source: str, *, max_tests: int, seed: int, split: str = "train"
) -> Callable[[], vf.data.Rows]:
    """A builder for ``Environment(eval_dataset=...)``: nothing is read until the rows are needed."""

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        return to_row(record, index, max_tests=max_tests, seed=seed)

    def build() -> vf.data.Rows:
        if source == SAMPLE:
            records: Any = sample_records()
        elif vf.data.is_intellect3(source):
            records = vf.data.hf_records(
                vf.data.INTELLECT3_DATASET, HF_SUBSET, split=split, install_hint=HUB_INSTALL_HINT
            )
        else:
            check_source(source)
            records = vf.data.read_records(source)
        return vf.data.Rows(records, convert)

    return build
