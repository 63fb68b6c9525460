"""Rubrics: reward functions, their weights, and how they are combined.

Every name is imported on first access (docs/architecture.md), so importing this package pulls in none
of its modules (the heavy dependencies, math-verify and sympy, load only inside worker processes anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "question_text": "verifiers.parsers.parser",
    "MultipleChoiceRubric": "verifiers.rubrics.choice_rubric",
    "HybridMathRubric": "verifiers.rubrics.hybrid_math_rubric",
    "math_or_hybrid_rubric": "verifiers.rubrics.hybrid_math_rubric",
    "JudgeRubric": "verifiers.rubrics.judge_rubric",
    "JudgeVerdict": "verifiers.rubrics.judge_rubric",
    "judge_from_args": "verifiers.rubrics.judge_rubric",
    "parse_verdict": "verifiers.rubrics.judge_rubric",
    "MathVerifyPool": "verifiers.rubrics.math_pool",
    "VerifyOutcome": "verifiers.rubrics.math_pool",
    "quick_verdict": "verifiers.rubrics.math_pool",
    "MathRubric": "verifiers.rubrics.math_rubric",
    "truncated": "verifiers.rubrics.metrics",
    "Rubric": "verifiers.rubrics.rubric",
    "RubricGroup": "verifiers.rubrics.rubric",
    "RunMetric": "verifiers.rubrics.rubric",
    "Score": "verifiers.rubrics.rubric",
    "compute_advantages": "verifiers.rubrics.rubric",
    "group_reward": "verifiers.rubrics.rubric",
    "is_group_reward": "verifiers.rubrics.rubric",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.parsers.parser import question_text as question_text
    from verifiers.rubrics.choice_rubric import MultipleChoiceRubric as MultipleChoiceRubric
    from verifiers.rubrics.hybrid_math_rubric import (
        HybridMathRubric as HybridMathRubric,
        math_or_hybrid_rubric as math_or_hybrid_rubric,
    )
    from verifiers.rubrics.judge_rubric import (
        JudgeRubric as JudgeRubric,
        JudgeVerdict as JudgeVerdict,
        judge_from_args as judge_from_args,
        parse_verdict as parse_verdict,
    )
    from verifiers.rubrics.math_pool import (
        MathVerifyPool as MathVerifyPool,
        VerifyOutcome as VerifyOutcome,
        quick_verdict as quick_verdict,
    )
    from verifiers.rubrics.math_rubric import MathRubric as MathRubric
    from verifiers.rubrics.metrics import truncated as truncated
    from verifiers.rubrics.rubric import (
        Rubric as Rubric,
        RubricGroup as RubricGroup,
        RunMetric as RunMetric,
        Score as Score,
        compute_advantages as compute_advantages,
        group_reward as group_reward,
        is_group_reward as is_group_reward,
    )
