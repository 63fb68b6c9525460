"""hle: the official protocol against a scripted model and a scripted judge (both real HTTP servers): the
answer-format system messages, the judge's prompt and structured-output request, its verdict read into
the reward and ``confidence``, the run's calibration error as the official scorer computes it, verdicts
cached by (question, response, judge model), a judge outage recorded as an infra error (never a 0),
text-only selection and the pinned row counts, and the gated dataset's one-line error."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hle import (
    DATA,
    JUDGE_MODEL,
    JUDGE_PROMPT,
    SAMPLES,
    SYSTEM_EXACT_ANSWER,
    SYSTEM_MULTIPLE_CHOICE,
    calibration_error,
    load_environment,
    parse_hle_verdict,
)

import verifiers as vf
from tests.env_testing import fake_datasets, refuse_dataset_access
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.clients.local_model import free_port
from verifiers.errors import DatasetAccessError, DatasetError


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLES["sample"].read_text().splitlines()]


def verdict_json(correct: bool, confidence: int, extracted: str = "x") -> str:
    return json.dumps(
        {
            "extracted_final_answer": extracted,
            "reasoning": "compared with the correct answer",
            "correct": "yes" if correct else "no",
            "confidence": confidence,
            "strict": True,
        }
    )


class Judge:
    """A judge that compares the reply's ``Exact Answer:`` / ``Answer:`` line with ``[correct_answer]`` and
    passes on the reply's stated confidence: the rule the official prompt describes, made literal."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        prompt = body["messages"][-1]["content"]
        gold = re.search(r"^\[correct_answer\]: (.*)$", prompt, re.MULTILINE)
        response = prompt.split("[response]: ", 1)[1].split("\n\nYour judgement must", 1)[0]
        said = re.search(r"^(?:Exact )?Answer: (.*)$", response, re.MULTILINE)
        stated = re.search(r"^Confidence: (\d+)%", response, re.MULTILINE)
        assert gold is not None
        extracted = said.group(1).strip() if said else "None"
        return Reply(
            content=verdict_json(
                extracted == gold.group(1).strip(), int(stated.group(1)) if stated else 100, extracted
            )
        )


def reply(answer: str, confidence: int) -> str:
    return f"Explanation: worked it out.\nExact Answer: {answer}\nConfidence: {confidence}%"


# --- the verdict and the calibration error -------------------------------------------------------------
def test_structured_verdict_parsing() -> None:
    v = parse_hle_verdict(verdict_json(True, 85, "15"))
    assert v is not None and v.correct and v.label == "yes"
    assert v.fields == {"extracted_final_answer": "15", "confidence": 85}
    fenced = parse_hle_verdict("```json\n" + verdict_json(False, 10) + "\n```")
    assert fenced is not None and not fenced.correct
    for bad in ("yes", "{}", verdict_json(True, 50).replace('"yes"', '"maybe"'), '{"correct": "yes"}', ""):
        assert parse_hle_verdict(bad) is None


def test_calibration_error_as_the_official_scorer_computes_it() -> None:
    # 200 rollouts in two bins of 100 (by confidence): the low bin (confidence 0.2, 20 right) is exact,
    # the high one (0.9, 90 right) too: no calibration error.
    calibrated = [(0.2, 1.0)] * 20 + [(0.2, 0.0)] * 80 + [(0.9, 1.0)] * 90 + [(0.9, 0.0)] * 10
    assert calibration_error(calibrated) == pytest.approx(0.0)
    # overconfident low bin: mean confidence 0.9, accuracy 0.0 -> sqrt(100/250 * 0.81); the last bin
    # (here 150 rollouts, it takes the remainder) is left out, as the official loop leaves it out.
    skewed = [(0.9, 0.0)] * 100 + [(1.0, 0.0)] * 150
    assert calibration_error(skewed) == pytest.approx(math.sqrt(100 / 250 * 0.81))
    assert calibration_error([(1.0, 0.0)] * 199) == 0.0  # one bin: the official loop sums nothing
    assert calibration_error([(0.5, 1.0)] * 99) is None  # fewer than one bin: no value
    assert calibration_error([(0.9, 0.0), (0.1, 1.0), (0.9, 0.0), (0.1, 1.0)], bin_size=2) == pytest.approx(
        math.sqrt(2 / 4 * 0.81)  # sorted: the two 0.1s (all right) first, gap 0.9; the last bin left out
    )


# --- rows ----------------------------------------------------------------------------------------------
def test_text_only_by_default_and_the_official_system_messages() -> None:
    rows = load_environment("sample").select_rows()
    assert [r["info"]["id"] for r in rows] == ["66fixture0001", "66fixture0002", "66fixture0003"]
    assert rows[0]["prompt"][0] == {"role": "system", "content": SYSTEM_EXACT_ANSWER}
    assert rows[1]["prompt"][0] == {"role": "system", "content": SYSTEM_MULTIPLE_CHOICE}
    assert rows[0]["prompt"][1]["content"] == [{"type": "text", "text": records()[0]["question"]}]
    assert "rationale" not in rows[0]["info"] and rows[0]["answer"] == "15"
    everything = load_environment("sample", multimodal=True).select_rows()
    assert len(everything) == 5
    image_part = everything[3]["prompt"][1]["content"][1]
    assert image_part["type"] == "image_url" and image_part["image_url"]["url"].startswith("data:image/png")


def test_pinned_rows_and_text_only_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    text, image = records()[0], records()[3]
    full = [dict(text, id=f"t{i}") for i in range(2158)] + [dict(image, id=f"i{i}") for i in range(342)]
    calls = fake_datasets(monkeypatch, [dict(r, image_preview=None, rationale_image=None) for r in full])
    env = load_environment()
    assert len(env.select_rows()) == 2158
    assert calls == [("cais/hle", None, "test", DATA.revision)]
    record = env.dataset_record()
    assert record is not None and record.rows == 2158 and record.selection == {"multimodal": False}
    assert len(load_environment(multimodal=True).select_rows()) == 2500
    one_more_with_an_image = [*full[:2157], dict(image, id="extra"), *full[2158:]]
    fake_datasets(monkeypatch, one_more_with_an_image)
    with pytest.raises(
        DatasetError, match=r"selected by \{'multimodal': False\} has 2157 rows, expected 2158"
    ):
        load_environment().select_rows()


def test_gated_without_access(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_dataset_access(monkeypatch, "DatasetNotFoundError")  # what datasets raises for a gated dataset
    with pytest.raises(
        DatasetAccessError, match=r"accept its terms at https://huggingface\.co/datasets/cais/hle"
    ):
        load_environment().select_rows()


# --- judged runs ---------------------------------------------------------------------------------------
def policy_rules(answers: dict[str, tuple[str, int]]) -> list[Rule]:
    rules = []
    for record in records():
        if record["id"] in answers:
            answer, confidence = answers[record["id"]]
            rules.append(Rule(match=record["question"], content=reply(answer, confidence)))
    return rules


async def test_judged_run_accuracy_confidence_and_calibration(tmp_path: Path) -> None:
    judge = Judge()
    answers = {"66fixture0001": ("15", 90), "66fixture0002": ("C", 80), "66fixture0003": ("1969", 60)}
    with ScriptedServer(handler=judge) as judge_server, ScriptedServer(rules=policy_rules(answers)) as model:
        env = load_environment(
            "sample",
            judge_base_url=judge_server.url,
            judge_model="judge-m",
            judge_api_key_var="",
            calibration_bin_size=1,
        )
        run = await env.a_evaluate(model.url, "m", rollouts_per_example=1, output_dir=tmp_path / "run")
    assert run.errors == []
    by_id = {r["info"]["id"]: r for r in run.results}
    assert {k: r["reward"] for k, r in by_id.items()} == {
        "66fixture0001": 1.0,
        "66fixture0002": 0.0,
        "66fixture0003": 1.0,
    }
    assert {k: r["metrics"]["confidence"] for k, r in by_id.items()} == {
        "66fixture0001": 0.9,
        "66fixture0002": 0.8,
        "66fixture0003": 0.6,
    }
    # bins of one, sorted by confidence (0.6 right, 0.8 wrong, 0.9 right); the last bin (0.9) is left out
    expected = math.sqrt(1 / 3 * (0.6 - 1.0) ** 2 + 1 / 3 * (0.8 - 0.0) ** 2)
    assert run.metadata.run_metrics["calibration_error"] == pytest.approx(expected)
    saved = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert saved["run_metrics"]["calibration_error"] == pytest.approx(expected)
    assert saved["dataset"]["selection"] == {"multimodal": False}
    # what the judge was sent: the official prompt, filled in, and the structured verdict asked for
    body = judge.bodies[0]
    assert body["model"] == "judge-m" and "temperature" not in body
    assert body["max_completion_tokens"] == 4096 or body.get("max_tokens") == 4096
    assert body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["required"]) == {
        "extracted_final_answer",
        "reasoning",
        "correct",
        "confidence",
        "strict",
    }
    sent = body["messages"][0]["content"]
    record = next(r for r in records() if r["id"] in answers and r["question"] in sent)
    filled = {
        "question": record["question"],
        "response": reply(*answers[record["id"]]),
        "answer": record["answer"],
    }
    assert sent == re.sub(r"\{(question|response|answer)\}", lambda m: filled[m.group(1)], JUDGE_PROMPT)


async def test_verdicts_are_cached_by_question_response_and_judge_model() -> None:
    judge = Judge()
    with ScriptedServer(handler=judge) as judge_server, ScriptedServer(default=reply("15", 70)) as model:
        env = load_environment("sample", judge_base_url=judge_server.url, judge_api_key_var="")
        run = await env.a_evaluate(model.url, "m", num_examples=1, rollouts_per_example=3)
        assert [r["reward"] for r in run.results] == [1.0] * 3
        assert len(judge.bodies) == 1  # three identical replies to one question: one verdict
        assert judge.bodies[0]["model"] == JUDGE_MODEL  # the official judge by default
        env.rubric.judge_model = "another-judge"  # type: ignore[attr-defined]
        await env.a_evaluate(model.url, "m", num_examples=1, rollouts_per_example=1)
        assert [b["model"] for b in judge.bodies] == [JUDGE_MODEL, "another-judge"]


async def test_a_judge_outage_is_an_infra_error_never_a_zero() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedServer(default=reply("15", 70)) as model:
        env = load_environment("sample", judge_base_url=dead, judge_api_key_var="")
        run = await env.a_evaluate(model.url, "m", num_examples=2, rollouts_per_example=1)
    assert [r["reward"] for r in run.results] == [None, None]
    assert {r["error"]["category"] for r in run.results} == {"infra"}
    assert {r["error"]["type"] for r in run.results} == {"JudgeUnavailableError"}
    assert run.metadata.avg_reward is None and run.metadata.run_metrics == {}


async def test_an_unreadable_verdict_is_a_scoring_error_and_a_cut_off_reply_is_not_judged() -> None:
    with (
        ScriptedServer(default="yes, correct") as judge_server,
        ScriptedServer(
            rules=[Rule(match="smallest positive integer", content="<think>n! needs three 5s")],
            default=reply("1969", 50),
        ) as model,
    ):
        env = load_environment("sample", judge_base_url=judge_server.url, judge_api_key_var="")
        run = await env.a_evaluate(model.url, "m", num_examples=2, rollouts_per_example=1)
        by_id = {r["info"]["id"]: r for r in run.results}
        cut = by_id["66fixture0001"]
        assert cut["reward"] == 0.0 and cut["metrics"]["parsed"] == 0.0 and cut["error"] is None
        unreadable = by_id["66fixture0002"]
        assert unreadable["reward"] is None and unreadable["error"]["category"] == "scoring"
        assert len(judge_server.requests) == 1  # only the reply that had an answer was judged


def test_the_smoke_check_arguments_point_the_judge_at_the_checks_model() -> None:
    from verifiers.envs.loading import smoke_env_args

    args = smoke_env_args("hle")
    assert args == {
        "source": "sample",
        "judge_base_url": "{model_url}",
        "judge_model": "vf-smoke-check",
        "judge_api_key_var": "",
    }
    assert isinstance(
        vf.load_environment("hle", **{**args, "judge_base_url": "http://127.0.0.1:9/v1"}), vf.Environment
    )
