"""aime2025: the 30 problems of AIME 2025 I and II, answered with an integer 0–999 in ``\\boxed{}``.

Data: ``opencompass/AIME2025`` at a pinned commit (configs ``AIME2025-I`` + ``AIME2025-II``), 30 rows (checked), or ``source=`` a local ``.jsonl`` / ``.json`` /
``.parquet`` file in its schema (``question`` and ``answer`` are all a row needs); ``source="sample"`` holds six
problems written for this package.
Scoring (``vf.integer_benchmark``): the last ``\\boxed{}`` after any closed ``<think>`` through ``MathRubric``
(math-verify); no box scores 0, never a number found elsewhere in the text; an unclosed ``<think>`` scores 0
and is counted in the ``truncated`` metric. ``judge_model=`` adds an LLM judge for answers math-verify does
not confirm (``HybridMathRubric``); the protocol's numbers use none.
"""

from __future__ import annotations

from pathlib import Path

import verifiers as vf

__all__ = ["DATA", "INSTRUCTION", "load_environment"]

#: opencompass/AIME2025 at this commit: two configs of 15 rows each, split ``test``; every row records its
#: config (``info.config``). Its card states no licence, so the rows are not shipped; the tests use fixtures.
DATA = vf.data.PinnedDataset(
    dataset="opencompass/AIME2025",
    revision="a6ad95f611d72cf628a80b58bd0432ef6638f958",
    configs=("AIME2025-I", "AIME2025-II"),
    split="test",
    rows=30,
    columns=("question", "answer"),
)
INSTALL_HINT = "pip install 'aime2025[data]'"
#: ``source="sample"``: six problems written for this package in the dataset's schema (offline checks).
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}
INSTRUCTION = "Reason step by step, then put your final answer, an integer from 0 to 999, inside \\boxed{}."


#: ``load_environment(source=None, *, system_prompt, instruction, judge_model, judge_base_url,
#: judge_api_key_var, judge_verdict_format, verify_timeout, verify_workers)``; see ``vf.integer_benchmark_loader``.
load_environment = vf.integer_benchmark_loader(
    DATA,
    task="aime2025",
    install_hint=INSTALL_HINT,
    question_key="question",
    answer_range=(0, 999),
    instruction=INSTRUCTION,
    bundled=SAMPLES,
)
