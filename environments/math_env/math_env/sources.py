"""Problem sources of math-env: the bundled sample, the procedural generator, INTELLECT-3's RL math data
(``PrimeIntellect/INTELLECT-3-RL``, subset ``math``) or a local ``.jsonl`` / ``.json`` / ``.parquet`` file.

Every source goes through the same steps (``vf.data.qa_dataset``): records → optional solve-rate
filter → rows converted on access (``question`` with the instruction appended, ``answer``, ``info`` with
the other columns). ``example_id`` is the record's position in its source, so it does not move when a
filter changes. The generator yields exactly ``num_examples`` records, so the cut keeps them all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

import verifiers as vf

SAMPLE = "sample"
GENERATED = "generated"
HF_SUBSET = "math"
DEFAULT_SOLVE_RATE_COLUMN = "avg@8_qwen3_4b_thinking_2507"
DEFAULT_GENERATED = 500
INSTALL_HINT = "pip install 'math-env[data]'"


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled problems (each with ``alternatives``: other notations of its answer)."""
    with resources.as_file(resources.files("math_env") / "data" / "sample.jsonl") as path:
        return tuple(vf.data.read_records(path))


def generated_records(num_examples: int, *, seed: int, difficulty: int) -> Callable[[], list[dict[str, Any]]]:
    """The generator's records (``num_examples`` of them, default 500), produced when first needed."""

    def generated() -> list[dict[str, Any]]:
        from math_env.generator import generate

        return generate(
            DEFAULT_GENERATED if num_examples < 0 else num_examples, seed=seed, difficulty=difficulty
        )

    return generated
