"""JudgeRubric and HybridMathRubric against the scripted OpenAI-compatible server: verdict parsing,
prompt rendering, caching (the server sees one request), and an unreachable judge recorded as an infra
error rather than a wrong answer."""

from __future__ import annotations

import asyncio

import pytest

from tests.rubrics.helpers import make_state
from tests.scripted_server import Reply, ScriptedServer
from verifiers.clients import Client
from verifiers.clients.local_model import free_port
from verifiers.rubrics import HybridMathRubric, JudgeRubric, parse_verdict
from verifiers.rubrics.judge_rubric import render_prompt


def judge_for(server: ScriptedServer, **kw: object) -> JudgeRubric:
    client = Client(server.url, max_retries=1, backoff_base=0.01)
    return JudgeRubric(judge_client=client, judge_model="judge-m", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "fmt", "expected"),
    [
        ("Yes.", "yes_no", ("yes", True)),
        ("no", "yes_no", ("no", False)),
        ("NO - the value differs", "yes_no", ("no", False)),
        ("<think>yes? no?</think>\nYes", "yes_no", ("yes", True)),
        ("The final answers match, so: yes", "yes_no", ("yes", True)),
        ("\\boxed{no}", "yes_no", ("no", False)),
        ("maybe", "yes_no", None),
        ("\\boxed{A}", "abc", ("A", True)),
        ("Reasoning... the grade is \\boxed{B}", "abc", ("B", False)),
        ("\\boxed{C}", "abc", ("C", False)),
        ("A", "abc", ("A", True)),
        ("Grade: B", "abc", ("B", False)),
        ("\\boxed{\\text{A}}", "abc", ("A", True)),
        ("I cannot decide", "abc", None),
    ],
)
def test_parse_verdict(text: str, fmt: str, expected: tuple[str, bool] | None) -> None:
    assert parse_verdict(text, fmt) == expected  # type: ignore[arg-type]


def test_render_prompt_substitutes_once_and_keeps_latex() -> None:
    out = render_prompt(
        "Q: {question}\nGold: {answer}\nR: {response}\n\\boxed{{A}} {other}",
        question="what is {answer}?",
        answer="\\frac{1}{2}",
        response="{{x}}",
    )
    assert out == "Q: what is {answer}?\nGold: \\frac{1}{2}\nR: {{x}}\n\\boxed{A} {other}"
    with pytest.raises(ValueError, match="response"):
        JudgeRubric(judge_prompt="no placeholder here")


async def test_yes_no_judge_reward_and_request(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(
        content="Yes." if "response:\nIt is Paris." in body["messages"][0]["content"] else "No."
    )
    judge = judge_for(scripted)
    right = make_state("It is Paris.", "Paris", question="Capital of France?")
    wrong = make_state("It is Lyon.", "Paris", question="Capital of France?", idx=1)
    await judge.score_group([right, wrong])
    assert right["reward"] == 1.0 and wrong["reward"] == 0.0
    assert set(right["metrics"]) == {"judge_correct", "parsed", "judge_invalid"}
    sent = scripted.requests[0]
    assert sent["model"] == "judge-m" and sent["temperature"] == 0.0
    content = sent["messages"][0]["content"]
    assert "Capital of France?" in content and "Paris" in content
    await judge.client.aclose()


async def test_abc_verdicts_and_invalid_metric(scripted: ScriptedServer) -> None:
    def handler(body: dict) -> Reply:
        text = body["messages"][0]["content"]
        if "Response:\n42" in text:
            return Reply(content="\\boxed{A}")
        if "Response:\n41" in text:
            return Reply(content="\\boxed{B}")
        return Reply(content="The response is cut off. \\boxed{C}")

    scripted.handler = handler
    judge = judge_for(scripted, verdict_format="abc")
    states = [make_state(t, "42", idx=i) for i, t in enumerate(["42", "41", "I was going to say"])]
    await judge.score_group(states)
    assert [s["reward"] for s in states] == [1.0, 0.0, 0.0]
    assert [s["metrics"]["judge_invalid"] for s in states] == [0.0, 0.0, 1.0]
    await judge.client.aclose()


async def test_verdict_cache_one_request(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content="yes", delay=0.1)
    judge = judge_for(scripted)
    states = [make_state("It is 7.", "7", idx=i) for i in range(6)]
    await judge.score_group(states)  # six identical rollouts at once: one call, shared
    assert [s["reward"] for s in states] == [1.0] * 6
    again = make_state("It is 7.", "7")
    await judge.score_rollout(again)  # later: from the cache
    assert again["reward"] == 1.0
    assert len(scripted.requests) == 1 and judge.requests == 1
    other = make_state("It is 8.", "7")
    await judge.score_rollout(other)
    assert len(scripted.requests) == 2
    await judge.client.aclose()


async def test_unreachable_judge_is_an_infra_error() -> None:
    client = Client(f"http://127.0.0.1:{free_port()}/v1", max_retries=2, backoff_base=0.01)
    judge = JudgeRubric(judge_client=client)
    s = make_state("It is 7.", "7")
    await judge.score_rollout(s)
    assert s["reward"] is None
    assert s["error"]["category"] == "infra" and s["error"]["type"] == "JudgeUnavailableError"
    await client.aclose()


async def test_judge_server_errors_after_retries_are_infra(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(status=503)
    judge = judge_for(scripted)
    s = make_state("It is 7.", "7")
    await judge.score_rollout(s)
    assert s["error"]["type"] == "JudgeUnavailableError" and s["reward"] is None
    assert len(scripted.requests) == 2  # first try + one retry
    await judge.client.aclose()


async def test_unparseable_verdict_is_a_scoring_error(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content="It depends on how you look at it.")
    judge = judge_for(scripted)
    s = make_state("It is 7.", "7")
    await judge.score_rollout(s)
    assert s["reward"] is None and s["error"]["category"] == "scoring"
    await judge.client.aclose()


async def test_no_answer_means_no_judge_call(scripted: ScriptedServer) -> None:
    judge = judge_for(scripted)
    s = make_state("<think>still thinking", "7")
    await judge.score_rollout(s)
    assert s["reward"] == 0.0 and s["metrics"]["parsed"] == 0.0 and scripted.requests == []
    await judge.client.aclose()


# --- HybridMathRubric --------------------------------------------------------------------------------
async def test_hybrid_judge_only_when_math_verify_does_not_confirm(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(
        content="yes" if "one half" in body["messages"][0]["content"] else "no"
    )
    rubric = HybridMathRubric(judge=judge_for(scripted), workers=1)
    await rubric.setup()
    try:
        states = [
            make_state("\\boxed{\\frac{2}{4}}", "\\frac{1}{2}"),  # math-verify confirms: no judge
            make_state("\\boxed{\\text{one half}}", "\\frac{1}{2}", idx=1),  # the judge rescues it
            make_state("\\boxed{3}", "\\frac{1}{2}", idx=2),  # both say no
            make_state("no box at all", "\\frac{1}{2}", idx=3),  # nothing to judge
        ]
        await rubric.score_group(states)
        assert [s["reward"] for s in states] == [1.0, 1.0, 0.0, 0.0]
        m = [s["metrics"] for s in states]
        assert [x["math_verify_correct"] for x in m] == [1.0, 0.0, 0.0, 0.0]
        assert [x["judge_called"] for x in m] == [0.0, 1.0, 1.0, 0.0]
        assert [x["judge_correct"] for x in m] == [0.0, 1.0, 0.0, 0.0]
        assert len(scripted.requests) == 2
    finally:
        await rubric.teardown()
        assert rubric.judge is not None
        await rubric.judge.client.aclose()


async def test_hybrid_without_judge_and_with_a_dead_one() -> None:
    plain = HybridMathRubric(workers=1)
    s = make_state("\\boxed{\\text{one half}}", "\\frac{1}{2}")
    await plain.score_rollout(s)
    assert s["reward"] == 0.0 and s["metrics"]["judge_called"] == 0.0
    await plain.teardown()

    client = Client(f"http://127.0.0.1:{free_port()}/v1", max_retries=1, backoff_base=0.01)
    rubric = HybridMathRubric(judge=JudgeRubric(judge_client=client), workers=1)
    ok = make_state("\\boxed{0.5}", "\\frac{1}{2}")
    needs_judge = make_state("\\boxed{\\text{one half}}", "\\frac{1}{2}", idx=1)
    await rubric.score_group([ok, needs_judge])
    assert ok["reward"] == 1.0  # math-verify alone decided: the dead judge does not matter
    assert needs_judge["reward"] is None and needs_judge["error"]["category"] == "infra"
    await rubric.teardown()
    await client.aclose()


async def test_judge_cache_survives_event_loops(scripted: ScriptedServer) -> None:
    scripted.handler = lambda body: Reply(content="yes")
    judge = judge_for(scripted)
    v1 = await judge.judge(question="q", answer="a", response="r")

    def in_other_loop() -> bool:
        return asyncio.run(judge.judge(question="q", answer="a", response="r")).cached

    assert await asyncio.to_thread(in_other_loop)
    assert v1.correct and len(scripted.requests) == 1
    await judge.client.aclose()
