"""Rubrics: reward functions, their weights, and how they are combined."""

from verifiers.rubrics.rubric import (
    Rubric,
    RubricGroup,
    Score,
    compute_advantages,
    group_reward,
    is_group_reward,
)

__all__ = ["Rubric", "RubricGroup", "Score", "compute_advantages", "group_reward", "is_group_reward"]
