"""The optional reasoning-gym backend (skipped when ``reasoning-gym`` is not installed)."""

from __future__ import annotations

from typing import Any

import logic_env
import pytest
from logic_env.env import correct_answer
from logic_env.parsing import LogicParser

pytest.importorskip("reasoning_gym")

RG_TASKS = ["mini_sudoku", "basic_arithmetic", "word_sorting"]


def rows(**kwargs: Any) -> list[dict[str, Any]]:
    env = logic_env.load_environment(source="reasoning_gym", rg_tasks=RG_TASKS, num_examples=9, **kwargs)
    return env.select_rows()


def test_rows_come_from_reasoning_gym_deterministically() -> None:
    a, b = rows(seed=5), rows(seed=5)
    assert a == b
    assert [r["task"] for r in a] == RG_TASKS * 3
    assert all("<answer></answer>" in r["prompt"][-1]["content"] for r in a)
    assert rows(seed=6) != a


def test_gold_scores_one_and_wrong_scores_zero_via_score_answer() -> None:
    parser = LogicParser()
    for row in rows(seed=1):
        good = [{"role": "assistant", "content": f"<think>ok</think><answer>{row['answer']}</answer>"}]
        assert correct_answer(good, row["answer"], row["info"], parser) == 1.0, row["task"]
        bad = [{"role": "assistant", "content": "<answer>definitely not it</answer>"}]
        assert correct_answer(bad, row["answer"], row["info"], parser) == 0.0, row["task"]
        untagged = [{"role": "assistant", "content": row["answer"]}]
        assert correct_answer(untagged, row["answer"], row["info"], parser) == 0.0


def test_config_overrides_and_unknown_tasks() -> None:
    env = logic_env.load_environment(
        source="reasoning_gym",
        rg_tasks=["basic_arithmetic"],
        num_examples=2,
        rg_config={"basic_arithmetic": {"min_terms": 2, "max_terms": 2}},
    )
    assert len(env.select_rows()) == 2
    with pytest.raises(ValueError, match="unknown reasoning-gym task"):
        logic_env.load_environment(source="reasoning_gym", rg_tasks=["no_such_dataset"])
    with pytest.raises(ValueError, match="rg_tasks"):
        logic_env.load_environment(source="reasoning_gym", tasks=["sudoku"], rg_tasks=["mini_sudoku"])
