"""aime2025: strict boxed-integer scoring (golden and adversarial completions), the pinned two-config
dataset (revision asked for, 30 rows checked, also through the real ``datasets`` library), ``source=`` a
file in its schema, and the issue's done-criterion: ``vf-eval aime2025 -a '{"source": FILE}'`` against a
scripted model (a real HTTP server) replying each gold answer in ``\\boxed{}`` scores 1.0 on every row, and
replying another problem's answer 0.0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aime2025 import DATA, load_environment

import verifiers as vf
from tests.env_testing import answered, fake_datasets, run_vf_eval
from tests.scripted_server import Rule, ScriptedServer
from verifiers.data import row_fingerprint
from verifiers.errors import DatasetError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aime2025_fixture.jsonl"


def fixture_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


async def score(env: vf.Environment, texts: list[tuple[dict[str, Any], str]]) -> list[vf.State]:
    states = [answered(env, row, text, i) for i, (row, text) in enumerate(texts)]
    await env.setup()
    try:
        await env.rubric.score_group(states)
    finally:
        await env.teardown()
    return states


async def test_golden_and_adversarial_completions() -> None:
    env = load_environment(str(FIXTURE), verify_workers=1)
    rows = env.select_rows()
    assert len(rows) == 8
    row, other = rows[0], rows[1]  # gold 40; the other problem's answer is 1
    cases = [
        (f"Counting pairs gives \\boxed{{{row['answer']}}}.", 1.0, 0.0),
        (
            f"<think>\nPairs (1,40)...(40,1).\n</think>\nSo the answer is $\\boxed{{{row['answer']}}}$",
            1.0,
            0.0,
        ),
        ("At first \\boxed{39}, but recounting: \\boxed{40}", 1.0, 0.0),  # the last box is the answer
        ("\\boxed{040}", 1.0, 0.0),  # AIME's zero padding is the same integer
        (f"\\boxed{{{other['answer']}}}", 0.0, 0.0),  # another problem's answer
        ("The answer is 40.", 0.0, 0.0),  # strict: no box, no answer, whatever the text holds
        ("40", 0.0, 0.0),
        ("<think>\nSo it is \\boxed{40}, and I should double-check by", 0.0, 1.0),  # cut-off reasoning
        ("<think>\\boxed{40}</think>\nI am not sure.", 0.0, 0.0),  # a box only inside the reasoning
        ("", 0.0, 0.0),
    ]
    states = await score(env, [(row, text) for text, _, _ in cases])
    got = [(s["reward"], s["metrics"]["truncated"]) for s in states]
    assert got == [(reward, cut) for _, reward, cut in cases]
    assert all(s["error"] is None for s in states)


def test_answers_are_checked_integers_without_padding(tmp_path: Path) -> None:
    rows = load_environment(str(FIXTURE)).select_rows()
    assert [r["answer"] for r in rows] == [r["answer"] for r in fixture_records()]
    padded = tmp_path / "padded.jsonl"
    padded.write_text(json.dumps({"question": "Q?", "answer": "007"}) + "\n")
    assert load_environment(str(padded)).select_rows()[0]["answer"] == "7"
    for bad in ("1000", "12.5", "x"):
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps({"question": "Q?", "answer": bad}) + "\n")
        with pytest.raises(
            DatasetError, match=f"aime2025 record 0: the answer must be an integer 0–999, not '{bad}'"
        ):
            load_environment(str(path)).select_rows()


def two_configs(config: str | None) -> list[dict[str, Any]]:
    records = fixture_records()
    return [{"question": f"[{config}] {r['question']}", "answer": r["answer"]} for r in (records * 2)[:15]]


def test_pinned_dataset_two_configs_thirty_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_datasets(monkeypatch, two_configs)
    env = load_environment()
    rows = env.select_rows()
    assert calls == [
        ("opencompass/AIME2025", "AIME2025-I", "test", DATA.revision),
        ("opencompass/AIME2025", "AIME2025-II", "test", DATA.revision),
    ]
    assert len(rows) == 30 and [r["example_id"] for r in rows] == list(range(30))
    assert rows[0]["info"]["config"] == "AIME2025-I" and rows[15]["info"]["config"] == "AIME2025-II"
    record = env.dataset_record()
    assert record is not None
    assert (record.dataset, record.revision, record.configs, record.rows) == (
        "opencompass/AIME2025",
        DATA.revision,
        ["AIME2025-I", "AIME2025-II"],
        30,
    )


def test_pinned_dataset_with_a_missing_row_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_datasets(monkeypatch, lambda config: two_configs(config)[: 14 if config == "AIME2025-II" else 15])
    with pytest.raises(DatasetError, match="has 29 rows, expected 30"):
        load_environment().select_rows()


def test_pinned_dataset_through_the_real_datasets_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    real = datasets.load_dataset
    asked: list[tuple[str, str | None, str]] = []

    def local_copy(name: str, config: str | None = None, *, split: str, revision: str) -> Any:
        asked.append((name, config, revision))
        path = tmp_path / f"{config}.parquet"
        pq.write_table(pa.Table.from_pylist(two_configs(config)), path)
        return real("parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf-cache"))

    monkeypatch.setattr(datasets, "load_dataset", local_copy)
    rows = load_environment().select_rows()
    assert len(rows) == 30 and {a[2] for a in asked} == {DATA.revision}


def rules_answering(rows: list[vf.Row], shift: int) -> list[Rule]:
    """A rule per problem: reply with the gold answer of the problem ``shift`` places on, boxed."""
    rules = []
    for i, row in enumerate(rows):
        question = row["info"]["question"]
        reply = rows[(i + shift) % len(rows)]["answer"]
        rules.append(Rule(match=question, content=f"Working it out... the answer is \\boxed{{{reply}}}."))
    return rules


@pytest.mark.parametrize(("shift", "reward"), [(0, 1.0), (1, 0.0)])
def test_vf_eval_on_a_source_file_scores_gold_one_and_other_answers_zero(
    tmp_path: Path, shift: int, reward: float
) -> None:
    rows = load_environment(str(FIXTURE)).select_rows()
    assert len({r["answer"] for r in rows}) == len(rows)  # another problem's answer is always wrong
    with ScriptedServer(rules=rules_answering(rows, shift), default="no idea") as server:
        args = ["aime2025", "-a", json.dumps({"source": str(FIXTURE)}), "-b", server.url, "-m", "m"]
        out = run_vf_eval(*args, "-r", "1", "--json", "-o", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["example_id"] for r in results) == list(range(8))
    assert [r["reward"] for r in results] == [reward] * 8
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["avg_reward"] == reward and meta["env_id"] == "aime2025"
    assert meta["dataset"]["source"] == "file" and meta["dataset"]["rows"] == 8
    assert meta["dataset"]["sha256"] == row_fingerprint(fixture_records(), DATA.columns)
    # the package's protocol reached the request: its sampling defaults
    assert server.requests[0]["temperature"] == 0.6 and server.requests[0]["top_p"] == 0.95
