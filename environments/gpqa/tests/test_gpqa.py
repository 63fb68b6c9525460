"""gpqa: every rollout sees its own option order, a function of (Record ID, seed, rollout index) only,
recorded in the rollout so a re-run and a re-score see the same letters; golden and adversarial replies;
the gated dataset's one-line error (library and ``vf-eval``, the latter against a real HTTP server that
refuses access as the Hugging Face hub does); Diamond by default, ``gpqa-diamond`` as an alias."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from gpqa import REVISION, SAMPLES, load_environment

import verifiers as vf
from tests.env_testing import answered, fake_datasets, refuse_dataset_access, run_vf_eval
from tests.scripted_server import Reply, ScriptedServer
from verifiers.data.choices import LETTERS
from verifiers.errors import DatasetAccessError
from verifiers.eval.rescore import rescore_run


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLES["sample"].read_text().splitlines()]


def shown_letter(prompt_text: str, option: str) -> str:
    """The letter ``option`` is shown under in a rendered question."""
    found = re.search(rf"^([A-D])\) {re.escape(option)}$", prompt_text, re.MULTILINE)
    assert found, (option, prompt_text)
    return found.group(1)


def user_text(state_or_row: Any) -> str:
    return str(state_or_row["prompt"][-1]["content"])


def test_each_rollout_has_its_own_seeded_order_and_records_it() -> None:
    env = load_environment("sample")
    row = env.select_rows()[0]
    correct = row["info"]["options"][0]
    states = [env.init_state(row, r) for r in range(16)]
    for s in states:
        assert s["answer"] == s["info"]["answer_letter"] == shown_letter(user_text(s), correct)
        assert sorted(s["info"]["choice_order"]) == [0, 1, 2, 3] and s["info"]["choice_seed"] == 0
        assert LETTERS[s["info"]["choice_order"].index(0)] == s["answer"]
    assert len({tuple(s["info"]["choice_order"]) for s in states}) > 4
    assert {s["answer"] for s in states} == {"A", "B", "C", "D"}
    again = load_environment("sample")  # a re-run: another instance, the same letters
    assert [again.init_state(row, r)["prompt"] for r in range(16)] == [s["prompt"] for s in states]
    reseeded = load_environment("sample", seed=7)
    assert [reseeded.init_state(row, r)["prompt"] for r in range(16)] != [s["prompt"] for s in states]


async def test_golden_and_adversarial_replies() -> None:
    env = load_environment("sample")
    row = env.select_rows()[1]
    state = env.init_state(row, 3)
    gold = state["answer"]
    wrong = next(c for c in "ABCD" if c != gold)
    cases = [
        (f"Reasoning about oxidation states.\n\nAnswer: {gold}", 1.0, 0.0),
        (f"\\boxed{{{gold}}}", 1.0, 0.0),
        (f"The answer is ({gold}).", 1.0, 0.0),
        (f"({wrong}) is tempting, but it over-oxidises.\nAnswer: {gold}", 1.0, 0.0),
        (f"Answer: I think it is {gold}.", 1.0, 0.0),
        (f"Answer: {wrong}", 0.0, 0.0),
        ("I think the milder reagent is the right one.", 0.0, 1.0),  # never the pronoun "I"
        (f"({wrong}) is tempting, but I am not sure.", 0.0, 1.0),  # a distractor in passing
        (f"<think>Answer: {gold}, surely; let me verify", 0.0, 1.0),  # cut off inside the reasoning
        ("Answer: E", 0.0, 1.0),  # not one of its four letters
    ]
    states = [answered(env, row, text, 3) for text, _, _ in cases]
    await env.rubric.score_group(states)
    assert [(s["reward"], s["metrics"]["unparsed"]) for s in states] == [(r, u) for _, r, u in cases]


def answer_key(body: dict[str, Any]) -> Reply:
    """A model that knows GPQA's sample: it finds the correct option's letter in the prompt."""
    text = body["messages"][-1]["content"]
    for record in records():
        if record["Question"] in text:
            return Reply(content=f"Let me think.\n\nAnswer: {shown_letter(text, record['Correct Answer'])}")
    return Reply(content="no idea")


async def test_a_rerun_and_a_rescore_see_the_recorded_letters(tmp_path: Path) -> None:
    env = vf.load_environment("gpqa", source="sample")
    with ScriptedServer(handler=answer_key) as server:
        run = await env.a_evaluate(server.url, "m", rollouts_per_example=4, output_dir=tmp_path / "run")
    assert run.errors == [] and len(run.results) == 16
    assert [r["reward"] for r in run.results] == [1.0] * 16
    assert run.metadata.avg_metrics["unparsed"] == 0.0
    assert len({(r["example_id"], r["answer"]) for r in run.results}) > 4  # letters differ across rollouts
    for r in run.results:
        assert r["answer"] == r["info"]["answer_letter"]
    # re-scoring reads the letters each rollout recorded (shuffling again would score these replies 0)
    rescored = await rescore_run(
        vf.load_environment("gpqa", source="sample"), tmp_path / "run", output_dir=tmp_path / "again"
    )
    assert [r["reward"] for r in rescored.results] == [1.0] * 16 and rescored.changed == 0
    # a model that always answers A is right exactly where the recorded letter is A
    with ScriptedServer(default="Answer: A") as server:
        run = await env.a_evaluate(server.url, "m", rollouts_per_example=4)
    assert [r["reward"] for r in run.results] == [1.0 if r["answer"] == "A" else 0.0 for r in run.results]


def test_diamond_by_default_main_on_request_and_the_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_datasets(monkeypatch, (records() * 50)[:198])
    assert len(load_environment().select_rows()) == 198
    fake_datasets(monkeypatch, (records() * 112)[:448])
    assert len(load_environment(diamond=False).select_rows()) == 448
    assert calls == [("Idavidrein/gpqa", "gpqa_diamond", "train", REVISION)]
    alias = vf.load_environment("gpqa-diamond", source="sample")
    assert alias.env_id == "gpqa"
    assert alias.select_rows() == load_environment("sample").select_rows()


def test_gated_without_access_is_one_line_naming_terms_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_dataset_access(monkeypatch)
    with pytest.raises(
        DatasetAccessError, match=r"https://huggingface\.co/datasets/Idavidrein/gpqa.*HF_TOKEN"
    ):
        load_environment().select_rows()


async def _refusing_hub(request: web.Request) -> web.Response:
    """The hub's answer to a token without access to a gated dataset."""
    return web.json_response(
        {"error": "Access to dataset Idavidrein/gpqa is restricted. You must have access to it."},
        status=403,
        headers={"X-Error-Code": "GatedRepo", "X-Error-Message": "Access restricted"},
    )


def test_vf_eval_without_access_stops_with_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _refusing_hub)
    hub = ScriptedServer()
    hub.app = lambda: app  # type: ignore[method-assign]  # the same real HTTP server, the hub's answers
    with hub, ScriptedServer(default="Answer: A") as model:
        monkeypatch.setenv("HF_ENDPOINT", hub.url.removesuffix("/v1"))
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("HF_TOKEN", "hf_no_access")
        monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        out = run_vf_eval("gpqa", "-b", model.url, "-m", "m", "-n", "2", "-r", "1", cwd=tmp_path)
    assert out.returncode != 0
    assert model.requests == []  # stopped before any rollout
    line = [ln for ln in out.stderr.splitlines() if "Idavidrein/gpqa" in ln]
    assert line, out.stderr[-3000:]
    assert "accept its terms at https://huggingface.co/datasets/Idavidrein/gpqa" in line[0]
    assert "HF_TOKEN is set, but its account has not been granted access" in line[0]
