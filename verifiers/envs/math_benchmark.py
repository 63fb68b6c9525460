"""``integer_benchmark``: a published benchmark whose answers are integers in a range (AIME: 0–999).

One builder for such environments, and ``integer_benchmark_loader``, the ``load_environment`` of a package
made of it, so each package declares only its pinned data and its columns:

- rows from ``verifiers.data.benchmark_qa`` (the pinned dataset or ``source=`` a file in its schema), each
  reference checked to be an integer in range and stored without zero padding (``"024"`` → ``"24"``);
- scoring by ``MathRubric`` (math-verify on the last ``\\boxed{}`` after any closed ``<think>``): no box scores
  0, never a number found elsewhere in the text; an unclosed ``<think>`` scores 0 and counts in the
  ``truncated`` metric; a judge (``HybridMathRubric``) only when one is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, validate_call

from verifiers.data.benchmark import PinnedDataset, benchmark_qa
from verifiers.envs.singleturn import SingleTurnEnv
from verifiers.errors import DatasetError
from verifiers.rubrics.hybrid_math_rubric import math_or_hybrid_rubric
from verifiers.rubrics.judge_rubric import JudgeRubric, judge_from_args
from verifiers.rubrics.metrics import truncated


def integer_answer(task: str, low: int, high: int, answer: str, index: int) -> str:
    """``answer`` as math-verify compares it (``"024"`` → ``"24"``); a ``DatasetError`` naming the record
    when it is not an integer from ``low`` to ``high``."""
    text = str(answer).strip()
    if not text.isdigit() or not low <= int(text) <= high:
        raise DatasetError(
            f"{task} record {index}: the answer must be an integer {low}–{high}, not {answer!r}"
        )
    return str(int(text))


def integer_benchmark(
    spec: PinnedDataset,
    source: str | None,
    *,
    task: str,
    install_hint: str,
    question_key: str,
    answer_range: tuple[int, int],
    instruction: str,
    system_prompt: str | None = None,
    bundled: Mapping[str, Path] | None = None,
    omit: Sequence[str] = (),
    judge: JudgeRubric | None = None,
    verify_timeout: float = 10.0,
    verify_workers: int | None = None,
) -> SingleTurnEnv:
    """The environment of an integer-answer benchmark (see the module docstring); ``instruction`` is
    appended to every problem (``""`` for the bare problem)."""
    low, high = answer_range
    build = benchmark_qa(
        spec,
        source,
        task=task,
        install_hint=install_hint,
        question_key=question_key,
        format_question=lambda problem: f"{problem}\n\n{instruction}" if instruction else problem,
        format_answer=lambda answer, index: integer_answer(task, low, high, answer, index),
        omit=omit,
        bundled=bundled,
    )
    rubric = math_or_hybrid_rubric(judge=judge, timeout=verify_timeout, workers=verify_workers)
    rubric.add_metric(truncated)
    return SingleTurnEnv(eval_dataset=build, system_prompt=system_prompt, rubric=rubric, task=task)


def integer_benchmark_loader(
    spec: PinnedDataset,
    *,
    task: str,
    install_hint: str,
    question_key: str,
    answer_range: tuple[int, int],
    instruction: str,
    bundled: Mapping[str, Path] | None = None,
    omit: Sequence[str] = (),
) -> Callable[..., SingleTurnEnv]:
    """The ``load_environment`` of a package that is ``integer_benchmark(spec, …)``, with the arguments a
    user may change (checked at the boundary: JSON from ``vf-eval -a`` is validated and coerced)."""
    default_instruction = instruction

    @validate_call
    def load_environment(
        source: str | None = None,
        *,
        system_prompt: str | None = None,
        instruction: str = default_instruction,
        judge_model: str | None = None,
        judge_base_url: str | None = None,
        judge_api_key_var: str | None = None,
        judge_verdict_format: Literal["yes_no", "abc"] = "yes_no",
        verify_timeout: Annotated[float, Field(gt=0)] = 10.0,
        verify_workers: Annotated[int, Field(ge=1)] | None = None,
    ) -> SingleTurnEnv:
        """The environment (see its package's docstring).

        Args:
            source: omitted for the pinned dataset (needs ``datasets`` and the network), the name of a file
                the package bundles in its schema (``"sample"``), or a local ``.jsonl`` / ``.json`` /
                ``.parquet`` file in its schema.
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
        return integer_benchmark(
            spec,
            source,
            task=task,
            install_hint=install_hint,
            question_key=question_key,
            answer_range=answer_range,
            instruction=instruction,
            system_prompt=system_prompt,
            bundled=bundled,
            omit=omit,
            judge=judge,
            verify_timeout=verify_timeout,
            verify_workers=verify_workers,
        )

    return load_environment
