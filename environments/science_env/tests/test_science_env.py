"""science-env: oracle round trips over the bundled questions (every accepted notation), unit stripping,
word and letter answers with and without a judge, hostile completions, every source through the same
loading code, and end-to-end runs against the scripted server (library and ``vf-eval``)."""

from __future__ import annotations

import json
import random
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from science_env import load_environment
from science_env.answers import choice_letter, classify, normalize_words, strip_units
from science_env.rubric import ScienceRubric
from science_env.sources import HF_SUBSET, sample_records

import verifiers as vf
from tests.env_testing import answered, fake_datasets, run_vf_eval
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.clients import Client
from verifiers.errors import EnvArgumentError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "intellect3_science.jsonl"


def boxed(answer: str, style: int = 0) -> str:
    return [
        f"The answer is $\\boxed{{{answer}}}$.",
        f"<think>\nCheck the units first.\n</think>\nTherefore \\boxed{{{answer}}}",
    ][style % 2]


def same_letter(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["info"]["answer_type"] == b["info"]["answer_type"] == "choice" and a["answer"] == b["answer"]


# --- answers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("9.8\\,\\text{m/s}^2", "9.8"),
        ("3 m/s^2", "3"),
        ("4.0 \\text{ kg m s}^{-1}", "4.0"),
        ("25\\ ^{\\circ}\\mathrm{C}", "25"),
        ("-273.15 °C", "-273.15"),
        ("2\\,\\Omega", "2"),
        ("12 \\mu\\text{m}", "12"),
        ("6.0 \\times 10^{8}\\ \\text{m}", "6.0 \\times 10^{8}"),
        ("\\frac{1}{50}\\ \\text{s}", "\\frac{1}{50}"),
        ("2mg", "2mg"),  # no separator: letters are kept
        ("3x", "3x"),
        ("x = 5 m", "x = 5"),
        ("\\text{mitochondria}", "\\text{mitochondria}"),  # no number would remain
    ],
)
def test_strip_units(text: str, stripped: str) -> None:
    assert strip_units(text) == stripped


def test_letters_words_and_kinds() -> None:
    assert [choice_letter(t) for t in ["B", "(b)", "\\text{C}", "D) argon", "Option A", "mitochondria"]] == [
        "B",
        "B",
        "C",
        "D",
        "A",
        None,
    ]
    assert normalize_words("The \\text{Mitochondria}.") == "mitochondria"
    assert normalize_words("\\mathrm{H_2O}") == normalize_words("H2O") == "h2o"
    assert [
        classify(a) for a in ["C", "4\\ \\text{m/s}^2", "\\frac{mv^2}{r}", "photosynthesis", "$mgh$"]
    ] == [
        "choice",
        "numeric",
        "symbolic",
        "word",
        "symbolic",
    ]


# --- oracle --------------------------------------------------------------------------------------------
def test_bundled_sample_covers_domains_and_kinds() -> None:
    records = sample_records()
    assert len(records) >= 40
    domains = Counter(r["info"]["domain"] for r in records)
    kinds = Counter(r["info"]["answer_type"] for r in records)
    assert set(domains) == {"physics", "chemistry", "biology"} and min(domains.values()) >= 10
    assert set(kinds) == {"numeric", "symbolic", "word", "choice"}
    with_units = [
        r
        for r in records
        if r["info"]["answer_type"] == "numeric" and strip_units(r["answer"]) != r["answer"]
    ]
    assert len(with_units) >= 10 and len(with_units) < kinds["numeric"]  # with and without units


async def test_oracle_bundled_sample() -> None:
    env = load_environment(verify_workers=2)
    rows = env.select_rows()
    rng = random.Random(0)
    states, expected, labels = [], [], []
    for i, row in enumerate(rows):
        for k, gold in enumerate([row["answer"], *row["info"]["alternatives"]]):
            states.append(answered(env, row, boxed(gold, i + k), len(states)))
            expected.append(1.0)
            labels.append((row["info"]["id"], gold))
        others = [rows[(i + 1) % len(rows)], *rng.sample(rows, 4)]
        for other in others:
            if other is row or same_letter(row, other):
                continue
            states.append(answered(env, row, boxed(other["answer"], i), len(states)))
            expected.append(0.0)
            labels.append((row["info"]["id"], "other: " + other["answer"]))
    assert not same_letter(rows[0], rows[1])
    await env.setup()
    try:
        await env.rubric.score_group(states)
    finally:
        await env.teardown()
    bad = [
        (lab, s["reward"], s["error"])
        for lab, s, e in zip(labels, states, expected, strict=True)
        if s["reward"] != e
    ]
    assert not bad, bad[:10]
    metric_keys = {frozenset(s["metrics"]) for s in states}
    assert len(metric_keys) == 1  # the same metrics on every rollout, whatever the kind


async def test_hostile_completions_score_zero_quickly() -> None:
    env = load_environment(verify_timeout=1.0, verify_workers=2)
    rows = env.select_rows()
    numeric = next(r for r in rows if r["info"]["answer_type"] == "numeric")
    word = next(r for r in rows if r["info"]["answer_type"] == "word")
    hostile = [
        (numeric, "no box: 4 m/s^2"),
        (numeric, "<think>\\boxed{4}"),
        (numeric, "\\boxed{" + "{" * 100_000),
        (numeric, "\\boxed{10^{10^{10^{10}}}\\ \\text{m/s}^2}"),
        (numeric, "\\boxed{" + "\\frac{" * 100 + "1" + "}{2}" * 100 + "}"),
        (word, "\\boxed{" + "mitochondria " * 200 + "}"),
    ]
    states = [answered(env, row, text, i) for i, (row, text) in enumerate(hostile)]
    await env.setup()
    t0 = time.monotonic()
    try:
        await env.rubric.score_group(states)
    finally:
        await env.teardown()
    assert [s["reward"] for s in states] == [0.0] * len(hostile)
    assert all(s["error"] is None for s in states)
    # Bounded: each runaway item is cut at 1 s; a loaded machine may take minutes to respawn the workers
    # that were killed, but one item left unbounded would take forever.
    assert time.monotonic() - t0 < 600


# --- judge ---------------------------------------------------------------------------------------------
def word_rows(env: vf.Environment) -> list[dict[str, Any]]:
    return [r for r in env.select_rows() if r["info"]["answer_type"] == "word"]


async def test_word_answers_exact_match_then_judge() -> None:
    env = load_environment()
    row = next(r for r in word_rows(env) if r["answer"] == "photosynthesis")
    with ScriptedServer(handler=lambda body: Reply(content="yes")) as server:
        judged = ScienceRubric(
            judge=vf.JudgeRubric(judge_client=Client(server.url, max_retries=1, backoff_base=0.01)), workers=1
        )
        plain = ScienceRubric(workers=1)
        exact = answered(env, row, boxed("Photosynthesis"))
        paraphrase = answered(env, row, boxed("light-driven carbon fixation"), 1)
        await judged.score_group([exact, paraphrase])
        assert exact["reward"] == 1.0 and exact["metrics"]["judge_called"] == 0.0  # no call needed
        assert paraphrase["reward"] == 1.0 and paraphrase["metrics"]["judge_called"] == 1.0
        assert len(server.requests) == 1
        assert "photosynthesis" in server.requests[0]["messages"][0]["content"]
        p2 = answered(env, row, boxed("light-driven carbon fixation"))
        await plain.score_rollout(p2)
        assert p2["reward"] == 0.0 and p2["metrics"]["exact_match"] == 0.0
        await judged.teardown()
        assert judged.judge is not None
        await judged.judge.client.aclose()


async def test_numeric_answers_verified_without_units_then_judged_as_written() -> None:
    env = load_environment()
    row = next(r for r in env.select_rows() if r["answer"] == "98\\ \\text{N}")
    with ScriptedServer(handler=lambda body: Reply(content="yes")) as server:
        judged = ScienceRubric(
            judge=vf.JudgeRubric(judge_client=Client(server.url, max_retries=1, backoff_base=0.01)), workers=1
        )
        confirmed = answered(env, row, boxed("98 N"))  # math-verify alone, units stripped
        rescued = answered(env, row, boxed("ninety-eight newtons"), 1)
        await judged.score_group([confirmed, rescued])
        assert confirmed["reward"] == 1.0 and confirmed["metrics"]["judge_called"] == 0.0
        assert confirmed["metrics"]["math_verify_correct"] == 1.0
        assert rescued["reward"] == 1.0 and rescued["metrics"]["math_verify_correct"] == 0.0
        assert rescued["metrics"]["judge_called"] == 1.0 and rescued["metrics"]["judge_correct"] == 1.0
        (request,) = server.requests
        # the judge sees the reference and the response as written, units included
        assert "98\\ \\text{N}" in request["messages"][0]["content"]
        assert "ninety-eight newtons" in request["messages"][0]["content"]
        await judged.teardown()
        assert judged.judge is not None
        await judged.judge.client.aclose()


async def test_unreachable_judge_is_infra_error_not_zero() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = load_environment()
    row = word_rows(env)[0]
    client = Client(f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01)
    rubric = ScienceRubric(judge=vf.JudgeRubric(judge_client=client), workers=1)
    st = answered(env, row, boxed("something else entirely"))
    await rubric.score_rollout(st)
    assert st["reward"] is None and st["error"]["category"] == "infra"
    await client.aclose()


# --- sources -------------------------------------------------------------------------------------------
def fixture_records() -> list[dict[str, Any]]:
    return vf.data.read_records(FIXTURE)


async def test_local_file_without_answer_types(tmp_path: Path) -> None:
    path = tmp_path / "sci.jsonl"
    with path.open("w") as f:
        for r in fixture_records():
            f.write(json.dumps({"q": r["question"], "a": r["answer"]}) + "\n")
    env = load_environment(source=str(path), question_key="q", answer_key="a", verify_workers=1)
    rows = env.select_rows()
    replies = [
        "\\boxed{2.5 \\text{ m s}^{-2}}",
        "\\boxed{Oxygen}",
        "\\boxed{(C)}",
        "\\boxed{hgm}",
        "\\boxed{3600000}",
    ]
    states = [answered(env, r, t, i) for i, (t, r) in enumerate(zip(replies, rows, strict=True))]
    wrong = [
        answered(env, r, "\\boxed{" + w + "}", 9)
        for w, r in zip(["25", "nitrogen", "A", "mg", "3.6"], rows, strict=True)
    ]
    await env.setup()
    try:
        await env.rubric.score_group(states + wrong)
    finally:
        await env.teardown()
    assert [s["reward"] for s in states] == [1.0] * 5
    assert [s["reward"] for s in wrong] == [0.0] * 5


def test_parquet_and_solve_rate_filter(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "sci.parquet"
    pq.write_table(pa.Table.from_pylist(fixture_records()), path)
    rows = load_environment(source=str(path), min_solve_rate=0.4, max_solve_rate=0.8).select_rows()
    assert [r["answer"] for r in rows] == ["oxygen", "C"]
    assert [r["example_id"] for r in rows] == [1, 2]
    assert rows[0]["info"]["source"] == "fixture"
    listed = tmp_path / "sci.json"  # the same records as one JSON list
    listed.write_text(json.dumps(fixture_records()))
    assert load_environment(source=str(listed), min_solve_rate=0.4, max_solve_rate=0.8).select_rows() == rows


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``datasets.load_dataset`` answering INTELLECT-3-RL/science from the local fixture (no network)."""
    return fake_datasets(monkeypatch, fixture_records())


@pytest.mark.parametrize("name", ["intellect3", "intellect-3", "INTELLECT-3"])
def test_intellect3_loader(fake_hub: list[tuple[Any, ...]], name: str) -> None:
    env = load_environment(source=name, min_solve_rate=0.3)
    assert fake_hub == []
    rows = env.select_rows()
    assert fake_hub == [(vf.data.INTELLECT3_DATASET, HF_SUBSET, "train")]
    assert [r["answer"] for r in rows] == ["2.5\\ \\mathrm{m/s^2}", "oxygen", "C", "$mgh$"]
    assert rows[0]["prompt"][-1]["content"].startswith("Answer the following science question.")


def test_argument_errors_and_defaults() -> None:
    with pytest.raises(ValueError, match="source must be"):
        load_environment(source="questions.csv")
    with pytest.raises(ValueError, match="solve-rate"):
        load_environment(max_solve_rate=0.5)
    with pytest.raises(ValueError, match=r"min_solve_rate \(0.8\) is above max_solve_rate \(0.2\)"):
        load_environment(source=str(FIXTURE), min_solve_rate=0.8, max_solve_rate=0.2)
    with pytest.raises(EnvArgumentError):
        vf.load_environment("science-env", difficulty=2)
    with pytest.raises(ValueError, match="verify_workers"):
        load_environment(verify_workers=0)
    env = load_environment()
    assert type(env) is vf.SingleTurnEnv  # the core runs the rubric's setup/teardown: no subclass needed
    assert isinstance(env.rubric, ScienceRubric) and env.rubric.judge is None
    assert env.select_rows(1)[0]["prompt"][0]["role"] == "user"
    judged = load_environment(judge_model="j", judge_base_url="http://127.0.0.1:9/v1")
    assert judged.rubric.judge is not None  # type: ignore[attr-defined]


# --- end to end ----------------------------------------------------------------------------------------
def scripted_replies(rows: list[dict[str, Any]], correct_every: int) -> list[tuple[str, str]]:
    out = []
    for i, row in enumerate(rows):
        if i % correct_every == 0:
            reply = boxed(row["info"]["alternatives"][0], i)
        else:
            other = next(o for o in rows[i + 1 :] + rows if o is not row and not same_letter(o, row))
            reply = boxed(other["answer"], i)
        out.append((row["info"]["question"], reply))
    return out


async def test_end_to_end_evaluate_against_scripted_server(tmp_path: Path) -> None:
    env = vf.load_environment("science-env", verify_workers=2)
    rows = env.select_rows(12)
    replies = scripted_replies(rows, correct_every=3)

    def handler(body: dict[str, Any]) -> Reply:
        text = body["messages"][-1]["content"]
        return Reply(content=next((r for q, r in replies if text.endswith(q)), "no idea"))

    with ScriptedServer(handler=handler) as server:
        run = await env.a_evaluate(
            server.url, "m", num_examples=12, rollouts_per_example=2, output_dir=tmp_path / "run"
        )
    assert run.errors == [] and len(run.results) == 24
    assert run.metadata.avg_reward == pytest.approx(4 / 12)
    by_domain = Counter(r["info"]["domain"] for r in run.results)
    assert set(by_domain) == {"physics", "chemistry", "biology"}


def test_vf_eval_cli_against_scripted_server(tmp_path: Path) -> None:
    rows = load_environment().select_rows(10)
    rules = [Rule(match=q, content=r) for q, r in scripted_replies(rows, correct_every=2)]
    with ScriptedServer(rules=rules, default="no idea") as server:
        args = ["science-env", "-b", server.url, "-m", "m", "-n", "10", "-r", "1"]
        out = run_vf_eval(*args, "-o", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["env_id"] == "science-env" and meta["avg_reward"] == pytest.approx(0.5)
