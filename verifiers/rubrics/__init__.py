"""Rubrics: reward functions, their weights, and how they are combined.

``MathRubric``, ``JudgeRubric``, ``HybridMathRubric`` and ``MathVerifyPool`` are imported on first
access, so importing this package never pulls in their modules (their heavy dependencies, math-verify
and sympy, load only inside worker processes anyway).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from verifiers.rubrics.rubric import (
    Rubric,
    RubricGroup,
    Score,
    compute_advantages,
    group_reward,
    is_group_reward,
)

_LAZY: dict[str, str] = {
    "MathRubric": "verifiers.rubrics.math_rubric",
    "question_text": "verifiers.parsers.parser",
    "MathVerifyPool": "verifiers.rubrics.math_pool",
    "VerifyOutcome": "verifiers.rubrics.math_pool",
    "quick_verdict": "verifiers.rubrics.math_pool",
    "JudgeRubric": "verifiers.rubrics.judge_rubric",
    "JudgeVerdict": "verifiers.rubrics.judge_rubric",
    "parse_verdict": "verifiers.rubrics.judge_rubric",
    "judge_from_args": "verifiers.rubrics.judge_rubric",
    "HybridMathRubric": "verifiers.rubrics.hybrid_math_rubric",
}

__all__ = [
    "HybridMathRubric",
    "JudgeRubric",
    "JudgeVerdict",
    "MathRubric",
    "MathVerifyPool",
    "Rubric",
    "RubricGroup",
    "Score",
    "VerifyOutcome",
    "compute_advantages",
    "group_reward",
    "is_group_reward",
    "judge_from_args",
    "parse_verdict",
    "question_text",
    "quick_verdict",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'verifiers.rubrics' has no attribute {name!r}")


if TYPE_CHECKING:
    from verifiers.parsers.parser import question_text
    from verifiers.rubrics.hybrid_math_rubric import HybridMathRubric
    from verifiers.rubrics.judge_rubric import JudgeRubric, JudgeVerdict, judge_from_args, parse_verdict
    from verifiers.rubrics.math_pool import MathVerifyPool, VerifyOutcome, quick_verdict
    from verifiers.rubrics.math_rubric import MathRubric
