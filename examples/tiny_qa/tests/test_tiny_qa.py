"""Tests of the tiny-qa environment: pytest tests/ (from this directory) or pytest <this file>."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def module() -> ModuleType:
    # Works from a checkout too, without installing the package.
    if str(PROJECT) not in sys.path:
        sys.path.insert(0, str(PROJECT))
    return importlib.import_module("tiny_qa")


def score(env: Any, row: dict[str, Any], reply: str) -> dict[str, Any]:
    state = env.init_state(row, 0)
    state["completion"] = [{"role": "assistant", "content": reply}]
    asyncio.run(env.score_rollout(state))
    return state


def test_gold_answer_scores_one(module: ModuleType) -> None:
    env = module.load_environment()
    rows = env.select_rows()
    assert len(rows) >= 5
    for row in rows:
        assert score(env, row, row["answer"])["reward"] == 1.0


def test_wrong_answer_scores_zero(module: ModuleType) -> None:
    env = module.load_environment()
    for row in env.select_rows():
        state = score(env, row, "I am not sure.")
        assert state["reward"] == 0.0
        assert state["error"] is None


def test_answer_in_a_sentence(module: ModuleType) -> None:
    row = module.load_environment().select_rows(1)[0]
    sentence = f"I think it is {row['answer']}."
    assert score(module.load_environment(), row, sentence)["reward"] == 1.0
    strict = score(module.load_environment(strict=True), row, sentence)
    assert strict["reward"] == 0.0
    assert strict["metrics"]["correct_answer"] == 1.0


def test_prompt_has_system_and_question(module: ModuleType) -> None:
    row = module.load_environment(system_prompt="Be brief.").select_rows(1)[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][0]["content"] == "Be brief."


def test_unknown_argument_is_rejected(module: ModuleType) -> None:
    with pytest.raises(TypeError):
        module.load_environment(no_such_argument=1)
