"""Validation mode: ``python -m swe_env.validate`` over the bundled tasks on runsc and bwrap, a sample of
generated tasks, a user's own SWE-bench and R2E-Gym rows from a file, a task whose gold patch is wrong
(non-zero exit), bad arguments, and the limits it shares with rollouts."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from swe_env import load_environment
from swe_env.adapters import task_to_r2e_row, task_to_swebench_row
from swe_env.limits import sandbox_limits
from swe_env.sources import load_tasks
from swe_env.validate import format_table, validate_tasks
from swe_testing import FILES_TASK

ENV_DIR = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swe_env.validate", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
        cwd=ENV_DIR,
    )


@pytest.mark.sandbox
def test_validate_cli_passes_on_every_bundled_task(secure_backend: str) -> None:
    r = _cli("--backend", secure_backend, "--concurrency", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(load_tasks())
    assert f"{n}/{n} tasks agree" in r.stdout and f"on {secure_backend}" in r.stdout
    assert r.stdout.count(" ok\n") == n


@pytest.mark.sandbox
def test_validate_cli_on_generated_tasks(fast_backend: str, tmp_path: Path) -> None:
    r = _cli(
        "--source", "generated", "--num-tasks", "8", "--backend", fast_backend,
        env={"SWE_ENV_CACHE_DIR": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8/8 tasks agree" in r.stdout


@pytest.mark.sandbox
async def test_a_wrong_gold_patch_is_a_disagreement(fast_backend: str) -> None:
    good = load_tasks()[0]
    other = load_tasks()[1]
    # a gold patch that applies but fixes nothing, and one that does not apply
    no_fix = dataclasses.replace(
        good,
        task_id="no-fix",
        gold_patch="diff --git a/NOTES b/NOTES\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES\n@@ -0,0 +1 @@\n+x\n",
    )
    wrong = dataclasses.replace(good, task_id="wrong-patch", gold_patch=other.gold_patch)
    reports = await validate_tasks([good, no_fix, wrong], backend=fast_backend, concurrency=3)
    assert [r.ok for r in reports] == [True, False, False]
    assert reports[1].gold.r2e == 0.0 and reports[1].gold.error is None
    assert reports[2].gold.error and "does not apply" in reports[2].gold.error
    table = format_table(reports, fast_backend)
    assert "1/3 tasks agree" in table and "FAIL" in table


def _user_rows(tmp_path: Path) -> tuple[Path, Path]:
    """A user's row files: SWE-bench rows as JSON Lines, R2E-Gym rows as a JSON list (a repository with
    a binary file, a symlink and a script; the thread-heavy bundled task; one more)."""
    tasks = [FILES_TASK, *(t for t in load_tasks() if t.task_id == "workpool-chunked-map-remainder")]
    tasks.append(load_tasks()[0])
    assert len(tasks) == 3
    swe, r2e = tmp_path / "swebench_rows.jsonl", tmp_path / "r2e_rows.json"
    swe.write_text("".join(json.dumps(task_to_swebench_row(t)) + "\n" for t in tasks))
    r2e.write_text(json.dumps([task_to_r2e_row(t) for t in tasks]))
    return swe, r2e


@pytest.mark.sandbox
def test_validate_cli_checks_a_users_own_rows(secure_backend: str, tmp_path: Path) -> None:
    swe, r2e = _user_rows(tmp_path)
    for source, path in (("swebench", swe), ("r2e", r2e)):
        r = _cli("--source", source, "--rows", str(path), "--backend", secure_backend, "--concurrency", "3")
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"3/3 tasks agree (expected empty 0/0, gold 1/1) on {secure_backend}" in r.stdout, r.stdout
        assert "swe-env__blobtool-header-length" in r.stdout or "blobtool" in r.stdout


def test_validate_cli_refuses_bad_arguments_and_rows_in_one_line(tmp_path: Path) -> None:
    swe, _ = _user_rows(tmp_path)
    image_only = tmp_path / "image_only.jsonl"
    image_only.write_text(json.dumps({"docker_image": "namanjain12/orange3_final:5a8c2e9c",
                                      "problem_statement": "x", "expected_output_json": "{}"}) + "\n")  # fmt: skip
    cases = [
        (["--source", "swebench"], "--source swebench needs --rows FILE"),
        (["--rows", str(swe)], "--rows is for --source r2e or swebench"),
        (["--source", "r2e", "--rows", str(tmp_path / "none.json")], "cannot read rows from"),
        (
            ["--source", "r2e", "--rows", str(image_only)],
            "needs the container image 'namanjain12/orange3_final",
        ),
        (["--sandbox-limits", '{"memory_mbb": 4096}'], "sandbox_limits: memory_mbb: Extra inputs"),
        (["--sandbox-limits", '{"max_procs": 64, "max_threads": 8}'], "max_threads (8) must be at least"),
        (["--sandbox-limits", "4096"], "a JSON object of SandboxLimits fields"),
    ]
    for args, message in cases:
        r = _cli(*args)
        assert r.returncode == 2 and message in r.stderr, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr


def test_validation_and_rollouts_share_the_limits() -> None:
    """The limits validation grades under are the rollouts' (and the generator's), with the same
    overrides; memory is resident memory and processes are not threads, so a 100-thread suite fits."""
    env = load_environment()
    assert env._sandboxes.limits == sandbox_limits()
    assert env._sandboxes.limits.max_threads >= 100 + env._sandboxes.limits.max_procs
    big = load_environment(sandbox_limits={"memory_mb": 4096, "max_procs": 256})
    assert big._sandboxes.limits == sandbox_limits(overrides={"memory_mb": 4096, "max_procs": 256})
    assert big._sandboxes.limits.memory_mb == 4096 and big._sandboxes.limits.cpu_s == 600
    with pytest.raises(ValueError, match="command_timeout"):
        load_environment(sandbox_limits={"timeout_s": 5})
    with pytest.raises(ValueError, match="sandbox_limits: memory_mb"):
        load_environment(sandbox_limits={"memory_mb": 1})
