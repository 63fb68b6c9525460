"""Rubrics: argument injection, weights, metrics, group functions, errors that are never a silent 0."""

from __future__ import annotations

import asyncio
import math

import pytest

from verifiers.errors import JudgeUnavailableError
from verifiers.parsers import Parser, extract_boxed_answer
from verifiers.rubrics import Rubric, RubricGroup, Score, compute_advantages, group_reward
from verifiers.types import State


def make_state(answer: str = "4", text: str = r"\boxed{4}", example_id: int = 0, idx: int = 0) -> State:
    return State(
        example_id=example_id,
        rollout_index=idx,
        task="t",
        prompt=[{"role": "user", "content": "2+2?"}],
        completion=[{"role": "assistant", "content": text}],
        answer=answer,
        info={"k": 1},
        turns=[],
        usage={},
        timing={"generation": 0.0, "scoring": 0.0, "total": 0.0},
        error=None,
        metrics={},
        reward=None,
    )


async def test_functions_receive_only_what_they_name() -> None:
    seen: dict[str, object] = {}

    def a(completion, answer) -> float:
        seen["a"] = (completion[0]["content"], answer)
        return 1.0

    async def b(info, parser, state) -> float:
        seen["b"] = (info, type(parser).__name__, state["example_id"])
        return 0.5

    def c(**kwargs) -> float:
        seen["c"] = sorted(kwargs)
        return 0.0

    r = Rubric([a, b, c], weights=[1.0, 2.0, 0.0])
    s = make_state()
    await r.score_rollout(s)
    assert s["reward"] == pytest.approx(2.0)
    assert s["metrics"] == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert seen["a"] == (r"\boxed{4}", "4")
    assert seen["b"] == ({"k": 1}, "Parser", 0)
    assert "completion" in seen["c"] and "parser" in seen["c"]  # type: ignore[operator]
    assert s["timing"]["scoring"] > 0


def test_unknown_argument_is_rejected_at_definition() -> None:
    def f(completion, banana) -> float:
        return 1.0

    with pytest.raises(ValueError, match="banana"):
        Rubric([f])


def test_class_objects_are_injectable() -> None:
    r = Rubric()
    r.add_class_object("judge", "JUDGE")
    got = []

    def f(judge) -> float:
        got.append(judge)
        return 1.0

    r.add_reward_func(f)
    s = make_state()
    asyncio.run(r.score_rollout(s))
    assert got == ["JUDGE"] and s["reward"] == 1.0


async def test_raising_reward_function_is_a_scoring_error_not_zero() -> None:
    def ok() -> float:
        return 1.0

    def broken(completion) -> float:
        raise ZeroDivisionError("oops")

    r = Rubric([ok, broken])
    s = make_state()
    await r.score_rollout(s)
    assert s["reward"] is None
    assert s["error"]["category"] == "scoring"
    assert "broken" in s["error"]["message"] and "ZeroDivisionError" in s["error"]["message"]
    assert s["metrics"] == {"ok": 1.0}


@pytest.mark.parametrize("bad", [float("nan"), "1.0", None, math.inf])
async def test_non_numeric_result_is_a_scoring_error(bad: object) -> None:
    def f() -> object:
        return bad

    s = make_state()
    await Rubric([f]).score_rollout(s)
    assert s["reward"] is None and s["error"]["type"] == "RewardFunctionError"


async def test_infra_error_from_reward_keeps_its_category() -> None:
    async def judge() -> float:
        raise JudgeUnavailableError("judge down")

    s = make_state()
    await Rubric([judge]).score_rollout(s)
    assert s["error"]["category"] == "infra" and s["reward"] is None


async def test_already_errored_rollouts_are_not_scored() -> None:
    calls = []

    def f() -> float:
        calls.append(1)
        return 1.0

    s = make_state()
    s["error"] = {"category": "model", "type": "EmptyResponseError", "message": "empty"}
    await Rubric([f]).score_rollout(s)
    assert calls == [] and s["reward"] is None


async def test_score_with_extra_metrics_and_bools() -> None:
    def f() -> Score:
        return Score(1.0, {"parsed": 1.0, "verify_s": 0.01})

    def g() -> bool:
        return True

    s = make_state()
    await Rubric([f, g], weights=[1.0, 0.5]).score_rollout(s)
    assert s["reward"] == 1.5
    assert s["metrics"] == {"f": 1.0, "parsed": 1.0, "verify_s": 0.01, "g": 1.0}


async def test_group_reward_functions_are_declared_not_guessed() -> None:
    @group_reward
    def rank(completions, answers) -> list[float]:
        # reward the shortest completion of the group
        lengths = [len(c[0]["content"]) for c in completions]
        return [1.0 if n == min(lengths) else 0.0 for n in lengths]

    def completions(completion) -> float:  # a *per-rollout* function whose name looks plural
        return 0.25

    r = Rubric([rank, completions])
    states = [make_state(text="x" * n, idx=i) for i, n in enumerate([3, 1, 2])]
    await r.score_group(states)
    assert [s["reward"] for s in states] == [0.25, 1.25, 0.25]
    assert r.has_group_funcs


async def test_group_function_with_wrong_length_errors_every_rollout() -> None:
    @group_reward
    def bad(states) -> list[float]:
        return [1.0]

    states = [make_state(idx=i) for i in range(3)]
    await Rubric([bad]).score_group(states)
    assert all(s["reward"] is None and s["error"]["category"] == "scoring" for s in states)


async def test_rubric_group_sums_and_runs_concurrently() -> None:
    # Each function finishes only once the other has started: run one after the other, the first would
    # wait out its guard and fail (a scoring error, no reward).
    a_started, b_started = asyncio.Event(), asyncio.Event()

    async def slow_a() -> float:
        a_started.set()
        await asyncio.wait_for(b_started.wait(), 60)
        return 1.0

    async def slow_b() -> float:
        b_started.set()
        await asyncio.wait_for(a_started.wait(), 60)
        return 2.0

    group = RubricGroup([Rubric([slow_a]), Rubric([slow_b], weights=[0.5])])
    s = make_state()
    await group.score_rollout(s)
    assert s["error"] is None, s["error"]
    assert s["reward"] == pytest.approx(2.0)
    assert s["metrics"] == {"slow_a": 1.0, "slow_b": 2.0}


async def test_rubric_group_error_in_one_member() -> None:
    def ok() -> float:
        return 1.0

    def bad() -> float:
        raise RuntimeError("x")

    s = make_state()
    await RubricGroup([Rubric([ok]), Rubric([bad])]).score_rollout(s)
    assert s["reward"] is None and s["error"]["category"] == "scoring"


async def test_parser_is_shared_with_reward_functions() -> None:
    def correct(completion, answer, parser) -> float:
        return float(parser.parse_answer(completion) == answer)

    s = make_state(answer="4", text=r"thinking... \boxed{4}")
    await Rubric([correct], parser=Parser(extract_boxed_answer)).score_rollout(s)
    assert s["reward"] == 1.0


def test_compute_advantages() -> None:
    assert compute_advantages([1.0, 0.0, 0.5]) == pytest.approx([0.5, -0.5, 0.0])
    assert compute_advantages([1.0, None, 0.0]) == [0.5, None, -0.5]
    assert compute_advantages([None, None]) == [None, None]


def test_duplicate_names_and_weight_mismatch() -> None:
    def f() -> float:
        return 1.0

    with pytest.raises(ValueError, match="already"):
        Rubric([f, f])
    with pytest.raises(ValueError, match="weights"):
        Rubric([f], weights=[1.0, 2.0])
