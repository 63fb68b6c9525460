"""mmlu-pro: up to ten options (A–J) in the dataset's order, the letter read strictly (a ten-option
question whose answer is "I" next to replies that use the pronoun), ``answer`` checked against
``answer_index``, categories, the pinned split's row count, and a run against the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mmlu_pro import DATA, SAMPLES, load_environment

import verifiers as vf
from tests.env_testing import answered, fake_datasets
from tests.scripted_server import Rule, ScriptedServer
from verifiers.errors import DatasetError


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLES["sample"].read_text().splitlines()]


def test_options_keep_their_order_with_up_to_ten_letters() -> None:
    rows = load_environment("sample").select_rows()
    ten = next(r for r in rows if len(r["info"]["options"]) == 10)
    text = ten["prompt"][-1]["content"]
    assert [line[:2] for line in text.splitlines() if line[1:3] == ". "] == [f"{c}." for c in "ABCDEFGHIJ"]
    assert ten["answer"] == "I" and ten["info"]["letters"] == "ABCDEFGHIJ"
    assert "The answer is (X)" in text and "cot_content" not in ten["info"]
    four = rows[0]
    assert four["info"]["letters"] == "ABCD"


async def test_golden_and_adversarial_replies_on_the_ten_option_question() -> None:
    env = load_environment("sample")
    row = next(r for r in env.select_rows() if r["answer"] == "I")
    cases = [
        ("Checking each candidate... The answer is (I).", 1.0, 0.0),
        ("Answer: I", 1.0, 0.0),
        ("\\boxed{I}", 1.0, 0.0),
        ("I checked them all. The answer is (H).", 0.0, 0.0),
        ("I think I know it, but I will not say.", 0.0, 1.0),  # the pronoun, three times
        ("The answer is (K).", 0.0, 1.0),  # no such option
        ("(I) and (J) are both prime candidates; hard to say.", 0.0, 1.0),
    ]
    states = [answered(env, row, text) for text, _, _ in cases]
    await env.rubric.score_group(states)
    assert [(s["reward"], s["metrics"]["unparsed"]) for s in states] == [(r, u) for _, r, u in cases]
    # a four-option question: letters beyond D are never its answer
    four = env.select_rows()[0]
    s = answered(env, four, "The answer is (E).")
    await env.rubric.score_rollout(s)
    assert (s["reward"], s["metrics"]["unparsed"]) == (0.0, 1.0)


def test_answer_must_match_answer_index(tmp_path: Path) -> None:
    bad = dict(records()[0], answer="B")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(DatasetError, match="question 90001: answer 'B' does not match answer_index 0"):
        load_environment(str(path)).select_rows()


def test_categories_and_the_pinned_row_count(monkeypatch: pytest.MonkeyPatch) -> None:
    env = load_environment("sample", categories=["math"])
    assert {r["info"]["category"] for r in env.select_rows()} == {"math"}
    assert env.dataset_record().selection == {"categories": ["math"]}  # type: ignore[union-attr]
    many = [dict(r, question_id=i) for i, r in enumerate((records() * 2407)[:12_032])]
    calls = fake_datasets(monkeypatch, many)
    full = load_environment()
    assert len(full.select_rows()) == 12_032
    assert calls == [("TIGER-Lab/MMLU-Pro", None, "test", DATA.revision)]
    fake_datasets(monkeypatch, many[:-1])
    with pytest.raises(DatasetError, match="has 12031 rows, expected 12032"):
        load_environment().select_rows()


async def test_run_against_the_scripted_model() -> None:
    env = vf.load_environment("mmlu-pro", source="sample")
    rows = env.select_rows()
    rules = [Rule(match=r["info"]["question"], content=f"The answer is ({r['answer']}).") for r in rows[:3]]
    with ScriptedServer(rules=rules, default="I would rather not guess.") as server:
        run = await env.a_evaluate(server.url, "m", rollouts_per_example=1)
    assert run.errors == []
    assert sorted(r["reward"] for r in run.results) == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert run.metadata.avg_metrics["unparsed"] == pytest.approx(0.4)
    assert run.metadata.dataset is not None and run.metadata.dataset.rows == 5
