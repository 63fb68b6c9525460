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
from typing import Annotated, Literal

from pydantic import Field, validate_call

import verifiers as vf
from verifiers.rubrics import judge_from_args

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


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str | None = None,
    *,
    system_prompt: str | None = None,
    instruction: str = INSTRUCTION,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str | None = None,
    judge_verdict_format: Literal["yes_no", "abc"] = "yes_no",
    verify_timeout: Annotated[float, Field(gt=0)] = 10.0,
    verify_workers: Annotated[int, Field(ge=1)] | None = None,
) -> vf.Environment:
    """The aime2025 environment.

    Args:
        source: omitted for the pinned ``opencompass/AIME2025`` (needs ``datasets`` and the network), ``"sample"``
            (six bundled problems in its schema) or a local ``.jsonl`` / ``.json`` / ``.parquet`` file in its
            schema.
        system_prompt: optional system message (none by default).
        instruction: appended to every problem (``""`` for the bare problem).
        judge_model, judge_base_url, judge_api_key_var, judge_verdict_format: an LLM judge consulted when
            math-verify does not confirm an answer (none by default).
        verify_timeout: hard limit in seconds on verifying one answer.
        verify_workers: math-verify worker processes (default: CPU count, at most 4).
    """
    judge = judge_from_args(
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        judge_api_key_var=judge_api_key_var,
        verdict_format=judge_verdict_format,
    )
    return vf.integer_benchmark(
        DATA,
        source,
        task="aime2025",
        install_hint=INSTALL_HINT,
        question_key="question",
        answer_range=(0, 999),
        instruction=instruction,
        system_prompt=system_prompt,
        bundled=SAMPLES,
        judge=judge,
        verify_timeout=verify_timeout,
        verify_workers=verify_workers,
    )
