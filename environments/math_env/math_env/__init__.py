"""math-env: competition-style math problems, answered in ``\\boxed{}`` and checked with math-verify.

Sources (``source=``): the bundled sample (default, offline), the seeded generator (``"generated"``),
INTELLECT-3's RL math data (``"intellect3"``, online, needs ``datasets``) or a local ``.jsonl`` /
``.json`` / ``.parquet`` file. The reward is ``MathRubric``'s ``correct``; with a judge configured it is
``HybridMathRubric``'s (math-verify, then the judge when math-verify does not confirm).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, validate_call

import verifiers as vf
from math_env.sources import (
    DEFAULT_SOLVE_RATE_COLUMN,
    GENERATED,
    HF_SUBSET,
    INSTALL_HINT,
    SAMPLE,
    generated_records,
    sample_records,
)
from verifiers.rubrics import judge_from_args

__all__ = ["INSTRUCTION", "load_environment"]

INSTRUCTION = "Reason step by step, then write the final answer inside \\boxed{}."


def make_rubric(
    *,
    judge: vf.JudgeRubric | None,
    verify_timeout: float,
    max_answer_chars: int,
    verify_workers: int | None,
) -> vf.MathRubric:
    """``MathRubric``, or ``HybridMathRubric`` when there is a judge."""
    if judge is None:
        return vf.MathRubric(
            timeout=verify_timeout, max_answer_chars=max_answer_chars, workers=verify_workers
        )
    return vf.HybridMathRubric(
        judge=judge, timeout=verify_timeout, max_answer_chars=max_answer_chars, workers=verify_workers
    )


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str = "sample",
    *,
    question_key: str = "question",
    answer_key: str = "answer",
    split: str = "train",
    num_examples: int = -1,
    seed: int = 0,
    difficulty: Literal[1, 2, 3] = 2,
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
    """The math-env environment.

    Args:
        source: ``"sample"`` (bundled, 68 problems), ``"generated"`` (seeded generator),
            ``"intellect3"`` or ``"intellect-3"`` (``PrimeIntellect/INTELLECT-3-RL`` subset ``math``) or a
            ``.jsonl`` / ``.json`` (a list) / ``.parquet`` path whose records have a question and an answer.
        question_key, answer_key: the record fields holding the question and the gold answer.
        split: the hub split (``intellect3`` only).
        num_examples: how many problems to generate (``generated``, default 500); for the other
            sources, keep only the first ``num_examples`` after filtering (-1: all).
        seed, difficulty: generator seed and difficulty (1, 2 or 3).
        solve_rate_column, min_solve_rate, max_solve_rate: keep problems whose solve rate lies in
            ``[min, max]`` (INTELLECT-3's static difficulty filtering); rows without one are dropped.
        system_prompt: optional system message (none by default).
        instruction: appended to every question (``""`` for the bare question).
        judge_model, judge_base_url, judge_api_key_var, judge_verdict_format: enable an LLM judge
            (``HybridMathRubric``) consulted when math-verify does not confirm an answer.
        verify_timeout: hard limit in seconds on verifying one answer.
        max_answer_chars: longer answers score 0 without verification.
        verify_workers: math-verify worker processes (default: CPU count, at most 4).
    """
    build = vf.data.qa_dataset(  # checks the source and range now, reads at first use
        source,
        task="math",
        hub_subset=HF_SUBSET,
        bundled={
            SAMPLE: sample_records,
            GENERATED: generated_records(num_examples, seed=seed, difficulty=difficulty),
        },
        install_hint=INSTALL_HINT,
        question_key=question_key,
        answer_key=answer_key,
        format_question=lambda question: f"{question}\n\n{instruction}" if instruction else question,
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
    rubric = make_rubric(
        judge=judge,
        verify_timeout=verify_timeout,
        max_answer_chars=max_answer_chars,
        verify_workers=verify_workers,
    )
    # The environment starts the rubric's verifier workers (and judge client) at setup() and stops them
    # at teardown(): one warm pool per run, nothing left running afterwards.
    return vf.SingleTurnEnv(eval_dataset=build, system_prompt=system_prompt, rubric=rubric, task="math")
