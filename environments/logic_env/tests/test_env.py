"""Environment-level tests: argument checks, laziness, determinism, answer parsing and full runs
through the real engine against the scripted OpenAI-compatible server (and the ``vf-eval`` CLI)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import logic_env
import pytest
from logic_env.env import answer_format, correct_answer
from logic_env.parsing import LogicParser
from logic_env.tasks import TASK_NAMES, TaskSpec, get_task

import verifiers as vf
from tests.env_testing import run_vf_eval
from tests.scripted_server import Reply, ScriptedServer
from verifiers.errors import EnvArgumentError


def digest(rows: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def rows_of(**kwargs: Any) -> list[dict[str, Any]]:
    return logic_env.load_environment(**kwargs).select_rows()


# --- loading -------------------------------------------------------------------------------------


def test_importing_the_package_does_no_work() -> None:
    code = (
        "import sys, logic_env; "
        "print(sorted(m for m in sys.modules if m.startswith(('verifiers.', 'datasets', 'reasoning_gym', 'logic_env.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_environment_builds_rows_lazily_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = TaskSpec.generate

    def counting(self: TaskSpec, seed: int | str, config: Any = None) -> Any:
        calls.append(self.name)
        return real(self, seed, config)

    monkeypatch.setattr(TaskSpec, "generate", counting)
    env = logic_env.load_environment(num_examples=500)
    assert calls == []
    assert len(env.select_rows(5)) == 5
    assert len(calls) == 5


def test_rows_mix_every_family_with_task_in_row_and_info() -> None:
    rows = rows_of(num_examples=2 * len(TASK_NAMES), difficulty="easy")
    assert {r["task"] for r in rows} == set(TASK_NAMES)
    for r in rows:
        assert r["info"]["task"] == r["task"] == r["info"]["verifier"]
        assert r["info"]["source"] == "generated"
        assert r["prompt"][-1]["role"] == "user" and "<answer></answer>" in r["prompt"][-1]["content"]
    assert [r["example_id"] for r in rows] == list(range(len(rows)))


def test_task_subset_config_overrides_and_mixed_difficulty() -> None:
    rows = rows_of(tasks=["sudoku"], num_examples=3, task_config={"sudoku": {"size": 9}})
    assert all(r["info"]["size"] == 9 for r in rows)
    mixed = rows_of(tasks=["maze", "sudoku"], num_examples=6, difficulty="mixed")
    assert [r["info"]["difficulty"] for r in mixed] == ["easy", "easy", "medium", "medium", "hard", "hard"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tasks": ["no_such_task"]}, "unknown logic task"),
        ({"tasks": []}, "at least one task"),
        ({"difficulty": "extreme"}, "difficulty must be"),
        ({"num_examples": 0}, "num_examples"),
        ({"task_config": {"sudoku": {"size": 5}}}, "size must be"),
        ({"task_config": {"sudoku": {"colour": 1}}}, "no config field"),
        ({"tasks": ["maze"], "task_config": {"sudoku": {"size": 9}}}, "not among the tasks"),
        ({"rg_tasks": ["mini_sudoku"]}, "rg_tasks only applies"),
        ({"source": "/nonexistent/file.jsonl"}, "source must be"),
        ({"source": "reasoning_gym"}, "needs rg_tasks"),
    ],
)
def test_bad_arguments_fail_at_load_time(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        logic_env.load_environment(**kwargs)


def test_loaded_by_id_with_identity_and_unknown_kwargs_rejected() -> None:
    env = vf.load_environment("logic-env", num_examples=3)
    assert env.env_id == "logic-env"
    assert env.env_version == "0.1.0"
    assert len(env.env_content_hash) == 64
    with pytest.raises(EnvArgumentError, match="bogus"):
        vf.load_environment("logic-env", bogus=1)


# --- determinism -----------------------------------------------------------------------------------


def test_same_seed_same_rows_and_different_seed_different_rows() -> None:
    a = rows_of(num_examples=36, difficulty="mixed", seed=7)
    b = rows_of(num_examples=36, difficulty="mixed", seed=7)
    c = rows_of(num_examples=36, difficulty="mixed", seed=8)
    assert a == b
    differing = {x["task"] for x, y in zip(a, c, strict=True) if x["prompt"] != y["prompt"]}
    assert differing == set(TASK_NAMES)


def test_a_row_does_not_depend_on_how_many_rows_are_asked_for() -> None:
    assert rows_of(num_examples=30)[:12] == rows_of(num_examples=12)


def test_rows_are_identical_across_processes_and_hash_seeds() -> None:
    code = (
        "import hashlib, json, logic_env; "
        "rows = logic_env.load_environment(num_examples=24, difficulty='mixed', seed=3).select_rows(); "
        "print(hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest())"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        digests.add(out.stdout.strip())
    digests.add(digest(rows_of(num_examples=24, difficulty="mixed", seed=3)))
    assert len(digests) == 1


# --- answer parsing and the rubric -----------------------------------------------------------------


def _msg(content: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": content}]


def test_reward_reads_the_last_answer_tag_after_thinking() -> None:
    row = rows_of(tasks=["boolean_expressions"], num_examples=1)[0]
    gold, wrong = row["answer"], "False" if row["answer"] == "True" else "True"
    parser = LogicParser()

    def reward(text: str) -> float:
        return correct_answer(_msg(text), row["answer"], row["info"], parser)

    assert reward(f"<think>maybe <answer>{wrong}</answer></think>\n<answer>{gold}</answer>") == 1.0
    assert reward(f"<answer>{wrong}</answer> no wait <answer>{gold}</answer>") == 1.0
    assert reward(f"<think>I think <answer>{gold}</answer>") == 0.0  # never closed: cut off mid-thought
    assert reward(f"<think><answer>{gold}</answer></think> done") == 0.0  # only inside the thinking
    assert reward(gold) == 0.0  # no tags
    assert reward(f"<answer>{wrong}</answer>") == 0.0
    assert answer_format(_msg(f"<think>x</think><answer>{gold}</answer>"), parser) == 1.0
    assert answer_format(_msg(f"<answer>{gold}</answer>"), parser) == 1.0
    assert answer_format(_msg(f"<answer>a</answer><answer>{gold}</answer>"), parser) == 0.0
    assert answer_format(_msg(gold), parser) == 0.0


# --- end to end through the engine ---------------------------------------------------------------


def _answer_for(row: dict[str, Any], correct: bool) -> str:
    """A reply for ``row``: an accepted answer (for multi-solution families one that may differ from
    the stored answer) or a wrong one."""
    spec = get_task(row["info"]["verifier"])
    if correct:
        answer = spec.solve({"answer": row["answer"], "info": row["info"]}, 3)[-1]
        return f"<think>Working it out.</think>\n<answer>\n{answer}\n</answer>"
    return "I am not sure. <answer>no idea</answer>"


def _scripted_handler(rows: list[dict[str, Any]], correct_ids: set[int]) -> Any:
    by_question = {r["prompt"][-1]["content"]: r for r in rows}

    def handler(body: dict[str, Any]) -> Reply:
        row = by_question[body["messages"][-1]["content"]]
        return Reply(content=_answer_for(row, row["example_id"] in correct_ids))

    return handler


def test_evaluate_against_scripted_server_rewards_the_scripted_correct_fraction() -> None:
    env = logic_env.load_environment(num_examples=36, difficulty="mixed", seed=11)
    rows = env.select_rows(36)
    correct_ids = {r["example_id"] for r in rows if r["example_id"] % 3 != 0}
    with ScriptedServer(handler=_scripted_handler(rows, correct_ids)) as server:
        run = env.evaluate(server.url, "m", num_examples=36, max_concurrent=8)
    assert run.metadata.counts.completed == 36
    assert not run.errors
    by_id = {r["example_id"]: r for r in run.results}
    for example_id, result in by_id.items():
        assert result["reward"] == (1.0 if example_id in correct_ids else 0.0), result["task"]
        assert result["metrics"]["answer_format"] == 1.0
        assert result["info"]["task"] == result["task"]
    assert run.metadata.avg_reward == pytest.approx(len(correct_ids) / 36)


def test_vf_eval_cli_against_scripted_server(tmp_path: Path) -> None:
    rows = logic_env.load_environment(num_examples=10, difficulty="easy").select_rows(10)
    correct_ids = {r["example_id"] for r in rows if r["example_id"] < 6}
    with ScriptedServer(handler=_scripted_handler(rows, correct_ids)) as server:
        args = ["logic-env", "-b", server.url, "-m", "m", "-n", "10", "-r", "1", "--json"]
        args += ["-a", json.dumps({"num_examples": 10, "difficulty": "easy"}), "-o", str(tmp_path / "run")]
        proc = run_vf_eval(*args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["metadata"]["counts"]["completed"] == 10
    assert summary["metadata"]["avg_reward"] == pytest.approx(0.6)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["reward"] for r in results) == [0.0] * 4 + [1.0] * 6
