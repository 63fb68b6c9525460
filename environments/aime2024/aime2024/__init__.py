"""aime2024: the 30 problems of AIME 2024 I and II, answered with an integer 0–999 in ``\\boxed{}``.

Data: ``HuggingFaceH4/aime_2024`` at a pinned commit, 30 rows (checked), or ``source=`` a local ``.jsonl`` / ``.json`` /
``.parquet`` file in its schema (``problem`` and ``answer`` are all a row needs); ``source="sample"`` holds six
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

#: HuggingFaceH4/aime_2024's main at this commit: 30 rows (AIME 2024 I and II), one ``train`` split. Its card
#: states no licence, so the rows are not shipped here; the tests use fixtures in its schema.
DATA = vf.data.PinnedDataset(
    dataset="HuggingFaceH4/aime_2024",
    revision="2fe88a2f1091d5048c0f36abc874fb997b3dd99a",
    split="train",
    rows=30,
    columns=("problem", "answer"),
)
INSTALL_HINT = "pip install 'aime2024[data]'"
#: ``source="sample"``: six problems written for this package in the dataset's schema (offline checks).
SAMPLES = {"sample": Path(__file__).with_name("data") / "sample.jsonl"}
INSTRUCTION = "Reason step by step, then put your final answer, an integer from 0 to 999, inside \\boxed{}."


#: ``load_environment(source=None, *, system_prompt, instruction, judge_model, judge_base_url,
#: judge_api_key_var, judge_verdict_format, verify_timeout, verify_workers)``; see ``vf.integer_benchmark_loader``.
load_environment = vf.integer_benchmark_loader(
    DATA,
    task="aime2024",
    install_hint=INSTALL_HINT,
    question_key="problem",
    answer_range=(0, 999),
    instruction=INSTRUCTION,
    bundled=SAMPLES,
    omit=("solution",),  # worked solutions stay out of every rollout's info
)
