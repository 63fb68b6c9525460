"""Question sources of science-env: the bundled sample, INTELLECT-3's RL science data
(``PrimeIntellect/INTELLECT-3-RL``, subset ``science``) or a local ``.jsonl`` / ``.json`` / ``.parquet``
file.

Every source goes through the same steps (``vf.data.qa_dataset``): records → optional
solve-rate filter → rows converted on access (the instruction and the question as the prompt,
``answer``, ``info`` with the other fields). ``example_id`` is the record's position in its source, so
it does not move when a filter changes.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import verifiers as vf

SAMPLE = "sample"
HF_SUBSET = "science"
DEFAULT_SOLVE_RATE_COLUMN = "avg@8_qwen3_4b_thinking_2507"
INSTALL_HINT = "pip install 'science-env[data]'"


@cache
def sample_records() -> tuple[dict[str, Any], ...]:
    """The bundled questions (``info``: ``domain``, ``answer_type``, ``alternatives``, ``aliases``)."""
    with resources.as_file(resources.files("science_env") / "data" / "sample.jsonl") as path:
        return tuple(vf.data.read_records(path))
