"""science-env: physics, chemistry and biology questions answered in ``\\boxed{}``.

Numeric answers are compared with math-verify after their units are stripped, symbolic ones with
math-verify as written, word answers by an LLM judge (when configured) or a normalised exact match, and
multiple-choice answers by their option letter (see ``science_env.rubric``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, validate_call

import verifiers as vf
from science_env.answers import choice_letter, classify, normalize_words, strip_units
from science_env.rubric import ScienceRubric
from science_env.sources import DEFAULT_SOLVE_RATE_COLUMN, HF_SUBSET, INSTALL_HINT, SAMPLE, sample_records
from verifiers.rubrics import judge_from_args

__all__ = [
    "INSTRUCTION",
    "ScienceRubric",
    "choice_letter",
    "classify",
    "load_environment",
    "normalize_words",
    "strip_units",
]

INSTRUCTION = "Answer the following science question. Put the answer (and only the answer) inside \\boxed{}."


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str = "sample",
    *,
    question_key: str = "question",
    answer_key: str = "answer",
    split: str = "train",
    num_examples: int = -1,
    solve_rate_column: str = DEFAULT_SOLVE_RATE_COLUMN,
    min_solve_rate: Annotated[float, Field(ge=0, le=1)] | None = None,
    max_solve_rate: Annotated[float, Field(ge=0, le=1)] | None = None,
    system_prompt: str | None = None,
    instruction: str = INSTRUCTION,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str | None = None,
    judge_verdict_format: Literal["yes_no", "abc"] = "yes_no",
    verify_timeout: Annotated[float, Field(gt=0)] = 10.0,
    max_answer_chars: Annotated[int, Field(ge=1)] = 1000,
    verify_workers: Annotated[int, Field(ge=1)] | None = None,
) -> vf.Environment:
    """The science-env environment.

    Args:
        source: ``"sample"`` (bundled, 47 questions), ``"intellect3"`` or ``"intellect-3"``
            (``PrimeIntellect/INTELLECT-3-RL`` subset ``science``) or a ``.jsonl`` / ``.json`` (a list) /
            ``.parquet`` path whose records have a question and an answer (optionally
            ``info.answer_type``: numeric, symbolic, word or choice).
        question_key, answer_key: the record fields holding the question and the gold answer.
        split: the hub split (``intellect3`` only).
        num_examples: keep only the first ``num_examples`` rows after filtering (-1: all).
        solve_rate_column, min_solve_rate, max_solve_rate: keep rows whose solve rate lies in
            ``[min, max]``; rows without one are dropped.
        system_prompt: optional system message (none by default).
        instruction: put before every question (``""`` for the bare question).
        judge_model, judge_base_url, judge_api_key_var, judge_verdict_format: enable an LLM judge for
            word answers and as fallback when math-verify does not confirm an answer.
        verify_timeout: hard limit in seconds on verifying one answer.
        max_answer_chars: longer answers score 0 without verification.
        verify_workers: math-verify worker processes (default: CPU count, at most 4).
    """
    build = vf.data.qa_dataset(  # checks the source and range now, reads at first use
        source,
        task="science",
        hub_subset=HF_SUBSET,
        bundled={SAMPLE: sample_records},
        install_hint=INSTALL_HINT,
        question_key=question_key,
        answer_key=answer_key,
        format_question=lambda question: f"{instruction}\n\n{question}" if instruction else question,
        split=split,
        num_examples=num_examples,
        solve_rate_column=solve_rate_column,
        min_solve_rate=min_solve_rate,
        max_solve_rate=max_solve_rate,
    )
    judge = judge_from_args(
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        judge_api_key_var=judge_api_key_var,
        verdict_format=judge_verdict_format,
    )
    rubric = ScienceRubric(
        judge=judge, timeout=verify_timeout, max_answer_chars=max_answer_chars, workers=verify_workers
    )
    # The environment starts the rubric's verifier workers (and judge client) at setup(), stops them at
    # teardown().
    return vf.SingleTurnEnv(eval_dataset=build, system_prompt=system_prompt, rubric=rubric, task="science")
