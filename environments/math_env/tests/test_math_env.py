"""math-env: oracle round trips (bundled and generated items, in several notations), determinism,
hostile completions, every data source through the same loading code, and end-to-end runs against the
scripted OpenAI-compatible server (library and ``vf-eval``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from math_env import load_environment
from math_env.generator import FAMILIES, generate
from math_env.sources import DEFAULT_SOLVE_RATE_COLUMN, HF_SUBSET, sample_records

import verifiers as vf
from tests.env_testing import answered, fake_datasets, run_vf_eval
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.errors import EnvArgumentError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "intellect3_math.jsonl"


def wrap(answer: str, style: int) -> str:
    """A completion ending in ``answer``, in one of a few shapes real models produce."""
    return [
        f"The answer is $\\boxed{{{answer}}}$.",
        f"<think>\nLet me check the arithmetic twice.\n</think>\nSo we get \\boxed{{{answer}}}",
        f"First guess \\boxed{{0}} was wrong; the final answer is \\[\\boxed{{{answer}}}\\]",
    ][style % 3]


async def oracle(env: vf.Environment, rows: list[dict[str, Any]]) -> None:
    """Gold answer and every alternative notation score 1; the next item's answer scores 0."""
    states, expected, labels = [], [], []
    for i, row in enumerate(rows):
        golds = [row["answer"], *row["info"].get("alternatives", [])]
        for k, g in enumerate(golds):
            states.append(answered(env, row, wrap(g, i + k), len(states)))
            expected.append(1.0)
            labels.append((row["example_id"], g))
        other = rows[(i + 1) % len(rows)]["answer"]
        states.append(answered(env, row, wrap(other, i), len(states)))
        expected.append(0.0)
        labels.append((row["example_id"], f"other: {other}"))
    await env.setup()
    try:
        await env.rubric.score_group(states)
    finally:
        await env.teardown()
    got = [s["reward"] for s in states]
    bad = [
        (lab, s["reward"], s["error"])
        for lab, s, e in zip(labels, states, expected, strict=True)
        if s["reward"] != e
    ]
    assert not bad, bad[:10]
    assert got == expected


# --- oracle round trips ------------------------------------------------------------------------------
def test_bundled_sample_is_large_and_varied() -> None:
    records = sample_records()
    assert len(records) >= 60
    cats = {r["category"] for r in records}
    assert cats >= {"arithmetic", "algebra", "fractions", "radicals", "intervals", "tuples", "pi", "numeric"}
    assert len({r["answer"] for r in records}) == len(records)  # distinct gold answers
    assert sum(len(r["alternatives"]) for r in records) >= 2 * len(records)


async def test_oracle_bundled_sample() -> None:
    env = load_environment(verify_workers=2)
    rows = env.select_rows()
    assert len(rows) == len(sample_records())
    await oracle(env, rows)


@pytest.mark.parametrize("difficulty", [1, 2, 3])
async def test_oracle_generated(difficulty: int) -> None:
    env = load_environment(
        source="generated", num_examples=40, seed=11, difficulty=difficulty, verify_workers=2
    )
    rows = env.select_rows()
    assert len(rows) == 40
    assert len({r["info"]["family"] for r in rows}) >= 6
    await oracle(env, rows)


# --- determinism ---------------------------------------------------------------------------------------
def test_generator_is_deterministic() -> None:
    a = generate(30, seed=5, difficulty=2)
    assert a == generate(30, seed=5, difficulty=2)
    assert generate(10, seed=5, difficulty=2) == a[:10]  # more items extend, never reshuffle
    assert a != generate(30, seed=6, difficulty=2)
    assert a != generate(30, seed=5, difficulty=3)
    assert {item["info"]["family"] for item in generate(200, seed=0)} == set(FAMILIES)
    env1 = load_environment(source="generated", num_examples=15, seed=3)
    env2 = load_environment(source="generated", num_examples=15, seed=3)
    assert env1.select_rows() == env2.select_rows()
    assert [r["example_id"] for r in env1.select_rows()] == list(range(15))


# --- hostile completions ------------------------------------------------------------------------------
async def test_hostile_completions_score_zero_quickly() -> None:
    env = load_environment(verify_timeout=1.0, verify_workers=2)
    row = env.select_rows(1)[0]
    hostile = [
        "no box here, the answer is 350",
        "<think>the answer is \\boxed{350}",
        "\\boxed{" + "{" * 100_000,
        "\\boxed{" + "\\frac{" * 120 + "1" + "}{2}" * 120 + "}",
        "\\boxed{10^{10^{10^{10}}}}",
        "\\boxed{" + "9^" * 300 + "9}",
    ]
    states = [answered(env, row, t, i) for i, t in enumerate(hostile)]
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


# --- sources -------------------------------------------------------------------------------------------
def fixture_records() -> list[dict[str, Any]]:
    return vf.data.read_records(FIXTURE)


def test_local_jsonl_with_renamed_keys(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    with path.open("w") as f:
        for r in fixture_records():
            f.write(json.dumps({"problem": r["question"], "solution": r["answer"], "level": 3}) + "\n")
    env = load_environment(source=str(path), question_key="problem", answer_key="solution", instruction="")
    rows = env.select_rows()
    assert len(rows) == 6 and rows[0]["answer"] == "74"
    assert rows[0]["prompt"] == [{"role": "user", "content": fixture_records()[0]["question"]}]
    assert rows[0]["info"]["level"] == 3
    with pytest.raises(ValueError, match="question_key"):
        load_environment(source=str(path)).select_rows()
    listed = tmp_path / "mine.json"  # the same records as one JSON list
    listed.write_text(json.dumps([json.loads(line) for line in path.read_text().splitlines()]))
    env = load_environment(source=str(listed), question_key="problem", answer_key="solution", instruction="")
    assert env.select_rows() == rows


def test_local_parquet_and_solve_rate_filter(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "math.parquet"
    pq.write_table(pa.Table.from_pylist(fixture_records()), path)
    env = load_environment(source=str(path), min_solve_rate=0.25, max_solve_rate=0.9)
    rows = env.select_rows()
    assert [r["answer"] for r in rows] == ["10", "6", "\\frac{10}{11}"]
    assert [r["example_id"] for r in rows] == [1, 2, 3]  # positions in the source, not after filtering
    assert rows[0]["info"]["source"] == "fixture"  # the JSON-string info column is decoded
    assert rows[0]["info"][DEFAULT_SOLVE_RATE_COLUMN] == 0.875
    # rows without a solve rate are dropped when a bound is set
    assert len(load_environment(source=str(path), max_solve_rate=1.0).select_rows()) == 5
    assert len(load_environment(source=str(path), num_examples=2).select_rows()) == 2


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``datasets.load_dataset`` answering INTELLECT-3-RL/math from the local fixture (no network)."""
    return fake_datasets(monkeypatch, fixture_records())


def test_intellect3_loader_through_the_same_filter(fake_hub: list[tuple[Any, ...]]) -> None:
    env = load_environment(source="intellect3", max_solve_rate=0.875)
    assert fake_hub == []  # nothing loaded at construction
    rows = env.select_rows()
    assert fake_hub == [(vf.data.INTELLECT3_DATASET, HF_SUBSET, "train")]
    assert [r["answer"] for r in rows] == ["10", "6", "\\frac{10}{11}", "6\\sqrt{3}"]
    assert "\\boxed{}" in rows[0]["prompt"][-1]["content"]
    assert rows[0]["info"]["question"].startswith("How many ordered pairs")
    with pytest.raises(ValueError, match="no column"):
        load_environment(source="intellect-3", min_solve_rate=0.1, solve_rate_column="nope").select_rows()


def test_intellect3_with_the_real_datasets_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(fixture_records()), path)
    real = datasets.load_dataset

    def local_copy(name: str, subset: str | None = None, *, split: str) -> Any:
        assert (name, subset) == (vf.data.INTELLECT3_DATASET, HF_SUBSET)
        return real("parquet", data_files=str(path), split=split, cache_dir=str(tmp_path / "hf-cache"))

    monkeypatch.setattr(datasets, "load_dataset", local_copy)
    rows = load_environment(source="intellect3", min_solve_rate=0.5).select_rows()
    assert [r["answer"] for r in rows] == ["74", "10", "6"]


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="source must be"):
        load_environment(source="nope.csv")
    with pytest.raises(ValueError, match="solve-rate"):
        load_environment(min_solve_rate=0.2)
    with pytest.raises(ValueError, match="difficulty"):
        load_environment(source="generated", difficulty=7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="verify_timeout"):
        load_environment(verify_timeout=0)
    with pytest.raises(ValueError, match="judge_verdict_format"):
        load_environment(judge_verdict_format="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_solve_rate"):
        load_environment(source=str(FIXTURE), max_solve_rate=8)
    with pytest.raises(ValueError, match=r"min_solve_rate \(0.8\) is above max_solve_rate \(0.2\)"):
        load_environment(source=str(FIXTURE), min_solve_rate=0.8, max_solve_rate=0.2)  # at load, not mid-run
    with pytest.raises(EnvArgumentError, match="bogus"):
        vf.load_environment("math-env", bogus=1)


def test_rubric_choice_and_no_system_prompt() -> None:
    env = load_environment()
    assert type(env) is vf.SingleTurnEnv and type(env.rubric) is vf.MathRubric
    assert env.select_rows(1)[0]["prompt"][0]["role"] == "user"
    judged = load_environment(judge_model="judge", judge_base_url="http://127.0.0.1:9/v1", system_prompt="S")
    assert isinstance(judged.rubric, vf.HybridMathRubric) and judged.rubric.judge is not None
    assert judged.rubric.judge.judge_model == "judge"
    assert judged.select_rows(1)[0]["prompt"][0] == {"role": "system", "content": "S"}


async def test_environment_lifecycle_starts_and_stops_the_verifier_workers() -> None:
    """``Environment.setup``/``teardown`` run the rubric's: a plain ``SingleTurnEnv`` is enough."""
    env = load_environment(verify_workers=1)
    await env.setup()
    try:
        assert env.rubric._pool is not None  # type: ignore[attr-defined]
    finally:
        await env.teardown()
    assert env.rubric._pool is None  # type: ignore[attr-defined]


# --- end to end ----------------------------------------------------------------------------------------
def scripted_answers(rows: list[dict[str, Any]], correct_every: int = 2) -> list[tuple[str, str]]:
    """(question text, reply) pairs: every ``correct_every``-th row answered right, the rest wrong."""
    out = []
    for i, row in enumerate(rows):
        question = row["info"]["question"]
        if i % correct_every == 0:
            alts = row["info"].get("alternatives") or [row["answer"]]
            reply = f"<think>work</think>The result is \\boxed{{{alts[0]}}}."
        else:
            reply = f"I believe it is \\boxed{{{rows[(i + 1) % len(rows)]['answer']}}}."
        out.append((question, reply))
    return out


async def test_end_to_end_evaluate_against_scripted_server(tmp_path: Path) -> None:
    env = vf.load_environment("math-env", verify_workers=2)
    rows = env.select_rows(10)
    answers = scripted_answers(rows)

    def handler(body: dict[str, Any]) -> Reply:
        text = body["messages"][-1]["content"]
        for question, reply in answers:
            if text.startswith(question):
                return Reply(content=reply)
        return Reply(content="no idea")

    with ScriptedServer(handler=handler) as server:
        run = await env.a_evaluate(
            server.url, "m", num_examples=10, rollouts_per_example=2, output_dir=tmp_path / "run"
        )
    assert run.errors == []
    assert len(run.results) == 20
    assert sum(run.rewards) / 20 == pytest.approx(0.5)  # type: ignore[arg-type]
    assert run.metadata.avg_reward == pytest.approx(0.5)
    assert all(r["metrics"]["parsed"] == 1.0 for r in run.results)
    assert run.metadata.env_id == "math-env"
    assert env.rubric._pool is None  # type: ignore[attr-defined]  # workers stopped at teardown


def test_vf_eval_cli_against_scripted_server(tmp_path: Path) -> None:
    rows = load_environment().select_rows(10)
    rules = [Rule(match=q, content=reply) for q, reply in scripted_answers(rows, correct_every=5)]
    with ScriptedServer(rules=rules, default="no idea") as server:
        args = ["math-env", "-b", server.url, "-m", "m", "-n", "10", "-r", "1", "--json"]
        out = run_vf_eval(*args, "-o", str(tmp_path / "run"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    meta = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert meta["env_id"] == "math-env" and meta["counts"]["completed"] == 10
    assert meta["avg_reward"] == pytest.approx(0.2)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["reward"] for r in results) == [0.0] * 8 + [1.0] * 2
