"""swe-env end to end through the ``vf-eval`` CLI against the scripted server, on runsc and bwrap: a
scripted agent fixes bundled tasks with each scaffold's own tools (reward 1), under both graders; the same
command against the real SmolLM2 (the issue's done-when: it runs, graded, reward 0 is fine); and the
arguments of ``load_environment``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from swe_env import load_environment
from swe_env.adapters import task_to_r2e_row, task_to_swebench_row
from swe_env.sources import load_tasks
from swe_testing import FILES_TASK, gold_edits, mini_gold_agent, r2e_gold_agent, results_of

from tests.env_testing import run_vf_eval
from tests.scripted_server import ScriptedServer
from verifiers.envs.loading import load_environment as vf_load
from verifiers.errors import EnvArgumentError

ROOT = Path(__file__).resolve().parents[3]


def test_arguments_are_checked() -> None:
    env = load_environment()
    assert env.max_turns == 200 and env.scaffold == "r2e" and env.grader == "r2e"
    assert [t["function"]["name"] for t in env.tool_schemas] == [
        "file_editor",
        "search",
        "execute_bash",
        "finish",
    ]
    params = env.tool_schemas[0]["function"]["parameters"]["properties"]
    assert set(params) == {
        "command",
        "path",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "view_range",
        "concise",
    }
    assert load_environment("mini").tool_schemas == []
    with pytest.raises(ValueError, match="unknown scaffold"):
        load_environment("swe-agent")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown grader"):
        load_environment(grader="exact")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_timeouts"):
        load_environment(max_timeouts=0)
    with pytest.raises(EnvArgumentError, match="max_step"):
        vf_load("swe-env", max_step=3)
    assert len(load_environment(num_tasks=2).rows()) == 2


def test_every_bundled_gold_patch_is_a_unique_str_replace() -> None:
    """What the scripted R2E agent relies on: each hunk's old block occurs once in its file."""
    for task in load_tasks("bundled"):
        assert task.gold_patch, task.task_id
        for edit in gold_edits(task.gold_patch):
            assert task.repo_files[edit.path].count(edit.old) == 1, (task.task_id, edit.path)


@pytest.mark.sandbox
@pytest.mark.parametrize(("scaffold", "grader"), [("r2e", "r2e"), ("mini", "swebench")])
def test_vf_eval_scripted_agent_solves_bundled_tasks(
    secure_backend: str, scaffold: str, grader: str, tmp_path: Path
) -> None:
    tasks = load_tasks("bundled")
    handler = r2e_gold_agent(tasks) if scaffold == "r2e" else mini_gold_agent(tasks)
    out = tmp_path / "run"
    env_args = {"backend": secure_backend, "scaffold": scaffold, "grader": grader, "pool_size": 2}
    with ScriptedServer(handler=handler) as server:
        proc = run_vf_eval(
            "swe-env", "-b", server.url, "-m", "scripted", "-n", "2", "-r", "1",
            "-a", json.dumps(env_args), "-o", str(out), "--json", cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = results_of(out)
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["reward"] == 1.0, (row["error"], row["grading"])
        assert row["stop_condition"] == "submitted" and row["sandbox_backend"] == secure_backend
        assert row["metrics"]["f2p"] == 1.0 and row["metrics"]["p2p"] == 1.0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["env_id"] == "swe-env" and meta["avg_reward"] == 1.0 and meta["env_args"] == env_args


@pytest.mark.sandbox
@pytest.mark.parametrize(("scaffold", "grader"), [("r2e", "r2e"), ("mini", "swebench")])
def test_vf_eval_solves_a_users_rows_from_a_file(
    secure_backend: str, scaffold: str, grader: str, tmp_path: Path
) -> None:
    """Rollouts over a user's rows file (``rows`` is its path): the thread-heavy bundled task (100
    threads at once, under the rollouts' limits) and a repository with a binary file, a symlink and a
    script. The scripted agent applies each gold fix with the scaffold's tools: reward 1 each."""
    tasks = [FILES_TASK, next(t for t in load_tasks() if t.task_id == "workpool-chunked-map-remainder")]
    source = "r2e" if grader == "r2e" else "swebench"
    export = task_to_r2e_row if source == "r2e" else task_to_swebench_row
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(export(t)) + "\n" for t in tasks))
    handler = r2e_gold_agent(tasks) if scaffold == "r2e" else mini_gold_agent(tasks)
    out = tmp_path / "run"
    env_args = {"backend": secure_backend, "scaffold": scaffold, "grader": grader, "pool_size": 2,
                "source": source, "rows": str(rows)}  # fmt: skip
    with ScriptedServer(handler=handler) as server:
        proc = run_vf_eval(
            "swe-env", "-b", server.url, "-m", "scripted", "-n", "2", "-r", "1",
            "-a", json.dumps(env_args), "-o", str(out), "--json", cwd=ROOT,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows_out = results_of(out)
    assert len(rows_out) == 2
    for row in rows_out:
        assert row["error"] is None and row["reward"] == 1.0, (row["error"], row["grading"])
        assert row["grading"]["infra_error"] is None


@pytest.mark.sandbox
@pytest.mark.smollm
@pytest.mark.parametrize("scaffold", ["r2e", "mini"])
def test_vf_eval_with_the_real_small_model_runs_and_grades(
    smollm: None, scaffold: str, tmp_path: Path
) -> None:
    """``vf-eval swe-env -m local/smollm2 -n 2``: vf-eval starts the llama.cpp server itself, each rollout
    runs its turns in a sandbox and is graded by the hidden tests. SmolLM2 fixes nothing, so every
    rollout must end scored (0 or 1, never None) with no error, and its grading ran the whole suite."""
    out = tmp_path / "run"
    env_args = {"scaffold": scaffold, "max_turns": 3, "backend": "bwrap", "pool_size": 2}
    # The timeout only guards against a hang: on a loaded machine one SmolLM2 turn can take minutes.
    proc = run_vf_eval(
        "swe-env", "-m", "local/smollm2", "-n", "2", "-r", "1", "-t", "200",
        "-a", json.dumps(env_args), "-o", str(out), "--json", cwd=ROOT, timeout=3600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["counts"]["completed"] == 2 and meta["counts"]["errored"] == {}, meta["counts"]
    rows = results_of(out)
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["reward"] in (0.0, 1.0), row["error"]
        assert row["scaffold"] == scaffold and row["sandbox_backend"] == "bwrap"
        assert 1 <= row["metrics"]["turns"] <= 3
        grading = row["grading"]
        assert grading["infra_error"] is None and grading["statuses"], grading
        assert row["metrics"]["tests_run"] == len(grading["statuses"])
