"""Validation mode: ``python -m swe_env.validate`` over the bundled tasks on runsc and bwrap, a sample of
generated tasks, and a task whose gold patch is wrong (non-zero exit)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from swe_env.task import load_tasks
from swe_env.validate import format_table, validate_tasks

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
