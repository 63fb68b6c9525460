"""Problem sources of math-env: the bundled sample, the procedural generator, INTELLECT-3's RL math data
(``PrimeIntellect/INTELLECT-3-RL``, subset ``math``) or a local ``.jsonl`` / ``.json`` / ``.parquet`` file.

Every source goes through the same steps (the shared ``vf.sources`` helpers): records → optional
solve-rate filter → rows converted on access (``question`` with the instruction appended, ``answer``,
``info`` with the other columns). ``example_id`` is the record's position in its source, so it does not
move when a filter changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import verifiers as vf

SAMPLE = "sample"
GENERATED = "generated"
INTELLECT3 = "intellect3"  # "intellect-3" works too (vf.sources.is_intellect3)
HF_SUBSET = "math"
DEFAULT_SOLVE_RATE_COLUMN = "avg@8_qwen3_4b_thinking_2507"
DEFAULT_GENERATED = 500
INSTALL_HINT = "pip install 'math-env[data]'"


def to_row(
    record: Mapping[str, Any], index: int, *, question_key: str, answer_key: str, instruction: str
) -> dict[str, Any]:
    """One dataset row (contract 3.2) from a source record."""
    question, answer, info = vf.sources.qa_fields(
        record, index, question_key=question_key, answer_key=answer_key
    )
    text = f"{question}\n\n{instruction}" if instruction else question
    return {"example_id": index, "question": text, "answer": answer, "info": info, "task": "math"}


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled problems (each with ``alternatives``: other notations of its answer)."""
    with resources.as_file(resources.files("math_env") / "data" / "sample.jsonl") as path:
        return tuple(vf.sources.read_records(path))


def builder(
    source: str,
    *,
    question_key: str = "question",
    answer_key: str = "answer",
    instruction: str = "",
    split: str = "train",
    num_examples: int = -1,
    seed: int = 0,
    difficulty: int = 2,
    solve_rate_column: str = DEFAULT_SOLVE_RATE_COLUMN,
    min_solve_rate: float | None = None,
    max_solve_rate: float | None = None,
) -> Callable[[], vf.sources.LazyRows]:
    """A dataset builder for ``Environment(eval_dataset=...)``: nothing is read until rows are needed.

    Arguments are checked here, eagerly, so a bad ``source`` or range fails at ``load_environment``.
    """
    kind = _source_kind(source)
    if kind in (SAMPLE, GENERATED) and (min_solve_rate is not None or max_solve_rate is not None):
        raise ValueError(f"source={source!r} has no solve-rate column to filter on")
    if min_solve_rate is not None and max_solve_rate is not None and min_solve_rate > max_solve_rate:
        raise ValueError(f"min_solve_rate ({min_solve_rate}) is above max_solve_rate ({max_solve_rate})")
    if kind == GENERATED and difficulty not in (1, 2, 3):
        raise ValueError(f"difficulty must be 1, 2 or 3, not {difficulty!r}")

    def convert(record: Mapping[str, Any], index: int) -> dict[str, Any]:
        return to_row(
            record, index, question_key=question_key, answer_key=answer_key, instruction=instruction
        )

    def build() -> vf.sources.LazyRows:
        if kind == GENERATED:  # exactly num_examples items: no filter, no cut
            from math_env.generator import generate

            count = DEFAULT_GENERATED if num_examples < 0 else num_examples
            return vf.sources.LazyRows(generate(count, seed=seed, difficulty=difficulty), convert)
        if kind == SAMPLE:
            records: Any = sample_records()
        elif kind == INTELLECT3:
            records = vf.sources.hf_records(
                vf.sources.INTELLECT3_DATASET, HF_SUBSET, split=split, install_hint=INSTALL_HINT
            )
        else:
            records = vf.sources.read_records(source, install_hint=INSTALL_HINT)
        return vf.sources.select_rows(
            records,
            convert,
            column_name=solve_rate_column,
            low=min_solve_rate,
            high=max_solve_rate,
            limit=num_examples,
        )

    return build


def _source_kind(source: str) -> str:
    if source in (SAMPLE, GENERATED):
        return source
    if vf.sources.is_intellect3(source):
        return INTELLECT3
    if vf.sources.local_path(source) is not None:
        return "file"
    raise ValueError(
        f"source must be {SAMPLE!r}, {GENERATED!r}, {INTELLECT3!r} or the path of an existing "
        f".jsonl, .json or .parquet file, not {source!r}"
    )
