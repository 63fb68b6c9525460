"""Grading a repository after the rollout: restore the hidden tests, run them, compare with ``expected``.

Two graders read the same run:

- ``r2e`` (R2E-Gym's rule): reward 1 only if every test of ``expected`` has exactly its expected status
  (R2E-Gym reads only ``PASSED``/``FAILED``/``ERROR`` summary lines; an ``ERROR`` never meets an expected
  ``FAILED``). R2E-Gym also compares the number of tests; here tests beyond ``expected`` are counted in the
  ``unexpected_tests`` metric but do not change the reward, so SWE-bench rows, whose lists cover only
  some of the tests, grade too.
- ``swebench`` (``RESOLVED_FULL``): every FAIL_TO_PASS test passes (``PASSED``/``XFAIL``) and every
  PASS_TO_PASS test is maintained (also ``SKIPPED``); a missing test fails.

Both report ``f2p`` and ``p2p`` (pass fractions; 1.0 for an empty list, as SWE-bench does),
``expected_match`` (fraction of ``expected`` met) and ``tests_run``.

A run that says nothing about the patch is an infra error (``GradeResult.infra_error``), never a 0: the
runner is missing, pytest stops on a usage or internal error or collects nothing, the whole run times
out, or the suite fails to collect (or dies before its summary) while the repository is untouched.
A log that reports no failure from a run that exited non-zero (output spoofed by the patch, e.g. a
``conftest.py`` hook printing ``PASSED``) scores 0, as SWE-bench does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from swe_env.files import FileEntry, tar_of_files
from swe_env.repo import RUNNER_PREFIX, SandboxLike, install_runner
from swe_env.task import SweTask
from swe_env.testlog import TestLog, convert_ids, parse_pytest_summary, strip_ansi

Grader = Literal["r2e", "swebench"]
GRADERS: tuple[Grader, ...] = ("r2e", "swebench")
MAX_LOG_CHARS = 50_000
#: pytest's exit codes that mean the run itself is broken (internal error, usage error, nothing collected)
_BROKEN_RUN_CODES = {3: "pytest internal error", 4: "pytest usage error", 5: "pytest collected no tests"}
#: configuration files that steer pytest: the agent's edits to them are discarded like test edits
_TEST_CONFIG = frozenset({"conftest.py", "pytest.ini", "tox.ini"})


@dataclass(frozen=True)
class GradeResult:
    reward: float
    metrics: dict[str, float]
    #: test id (in the task's id style) -> pytest outcome word
    statuses: dict[str, str]
    log: str
    #: set when the run says nothing about the patch (see the module docstring); the env records an infra
    #: error for the rollout instead of a reward
    infra_error: str | None = None
    exit_code: int | None = None
    extra: dict[str, object] = field(default_factory=dict)


def is_test_path(path: str) -> bool:
    """Whether a repository path is a test file or test configuration (edits to those are discarded)."""
    p = PurePosixPath(path)
    if p.name in _TEST_CONFIG:
        return True
    if p.suffix != ".py":
        return False
    return (
        p.name.startswith("test_")
        or p.name.endswith("_test.py")
        or any(part in ("tests", "test", "testing") for part in p.parts[:-1])
    )


def protected_files(task: SweTask) -> dict[str, FileEntry]:
    """What grading writes back before the run: the repository's own test files, then the hidden tests."""
    out = {p: t for p, t in task.repo_files.items() if is_test_path(p)}
    out.update(task.hidden_tests)
    return out


# Run in the sandbox (python3 fast path): delete test files the agent added, so only the task's tests run.
_CLEANUP = r"""
import json, os, sys
keep = set(json.loads(sys.argv[1]))
cfg = {"conftest.py", "pytest.ini", "tox.ini"}
for root, dirs, files in os.walk("."):
    dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
    rel_root = os.path.relpath(root, ".")
    parts = [] if rel_root == "." else rel_root.split(os.sep)
    for name in files:
        rel = "/".join([*parts, name])
        if rel in keep:
            continue
        is_test = name in cfg or (name.endswith(".py") and (
            name.startswith("test_") or name.endswith("_test.py")
            or any(p in ("tests", "test", "testing") for p in parts)))
        if is_test:
            os.remove(os.path.join(root, name))
# modules at the top of the repository that would shadow the runner (`python -m pytest` puts the
# repository first on sys.path) or run at start-up: removed unless the task's repository had them
original = set(json.loads(sys.argv[2]))
shadows = {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py", "sitecustomize",
           "usercustomize"}
import shutil
for entry in os.listdir("."):
    stem = entry[:-3] if entry.endswith(".py") else entry
    if stem in shadows and not any(p == entry or p.startswith(entry + "/") for p in original):
        path = os.path.join(".", entry)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
"""


async def restore_tests(sandbox: SandboxLike, task: SweTask, workdir: str = "repo") -> None:
    """Write back every protected file; delete test files the agent created and modules that would
    shadow the runner (a ``pytest.py`` printing a fake summary)."""
    files = protected_files(task)
    if files:
        await sandbox.upload_bundle(tar_of_files(files), dest=workdir)
    argv = ["python3", "-c", _CLEANUP, json.dumps(sorted(files)), json.dumps(sorted(task.repo_files))]
    r = await sandbox.exec(argv, cwd=workdir, timeout=60)
    if r.exit_code != 0:
        raise RuntimeError(f"could not restore the hidden tests: {(r.stderr or r.stdout)[-2000:]}")


async def repo_untouched(sandbox: SandboxLike, task: SweTask, workdir: str = "repo") -> bool:
    """True when the repository equals its initial commit, apart from the (restored) test files."""
    r = await sandbox.exec(
        ["git", "status", "--porcelain", "--untracked-files=all", "--no-renames"], cwd=workdir, timeout=60
    )
    if r.exit_code != 0:
        return False
    protected = set(protected_files(task))
    for line in r.stdout.splitlines():
        path = line[3:].strip().strip('"')
        if path and path not in protected and not path.endswith((".pyc", "/")) and "__pycache__" not in path:
            return False
    return True


def _fraction(ok: int, total: int) -> float:
    return 1.0 if total == 0 else ok / total


def score_statuses(
    task: SweTask, statuses: Mapping[str, str], grader: Grader, *, log_consistent: bool = True
) -> tuple[float, dict[str, float]]:
    """Reward and metrics of a run's statuses (task id style) under ``grader``."""
    r2e_view = {k: v for k, v in statuses.items() if v in ("PASSED", "FAILED", "ERROR")}
    met = sum(1 for t, s in task.expected.items() if r2e_view.get(t) == s)
    f2p_ok = sum(1 for t in task.fail_to_pass if statuses.get(t) in ("PASSED", "XFAIL"))
    p2p_ok = sum(1 for t in task.pass_to_pass if statuses.get(t) in ("PASSED", "XFAIL", "SKIPPED"))
    metrics = {
        "f2p": _fraction(f2p_ok, len(task.fail_to_pass)),
        "p2p": _fraction(p2p_ok, len(task.pass_to_pass)),
        "expected_match": _fraction(met, len(task.expected)),
        "tests_run": float(len(statuses)),
        "unexpected_tests": float(len(set(r2e_view) - set(task.expected))),
        "log_inconsistent": 0.0 if log_consistent else 1.0,
    }
    if grader == "r2e":
        ok = bool(task.expected) and met == len(task.expected)
    elif grader == "swebench":
        ok = metrics["f2p"] == 1.0 and metrics["p2p"] == 1.0 and bool(task.fail_to_pass or task.pass_to_pass)
    else:
        raise ValueError(f"unknown grader {grader!r}; choose 'r2e' or 'swebench'")
    reward = 1.0 if ok and log_consistent else 0.0
    return reward, metrics


def _clip(text: str) -> str:
    if len(text) <= MAX_LOG_CHARS:
        return text
    half = MAX_LOG_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - MAX_LOG_CHARS} characters elided ...]\n{text[-half:]}"


async def grade(
    sandbox: SandboxLike,
    task: SweTask,
    *,
    grader: Grader = "r2e",
    workdir: str = "repo",
    timeout: float = 120.0,  # noqa: ASYNC109 - the test run's budget, enforced in the sandbox
) -> GradeResult:
    """Restore the hidden tests in ``workdir``, run ``task.test_cmd`` and score the outcome.

    The repository must have been set up with ``prepare_repo``; the runner is reinstalled. A sandbox that
    dies raises ``verifiers.errors.SandboxError`` (an infra error) as usual.
    """
    if grader not in GRADERS:
        raise ValueError(f"unknown grader {grader!r}; choose 'r2e' or 'swebench'")
    t0 = time.perf_counter()
    # a fresh runner too: the agent could have edited the one prepare_repo installed
    await install_runner(sandbox)
    await restore_tests(sandbox, task, workdir)
    r = await sandbox.exec(RUNNER_PREFIX + task.test_cmd, cwd=workdir, timeout=timeout)
    out = r.stdout + (("\n" + r.stderr) if r.stderr else "")
    log = _clip(out)
    parsed: TestLog = parse_pytest_summary(r.stdout)
    statuses = convert_ids(parsed.outcomes, task.test_ids)

    def infra(msg: str) -> GradeResult:
        return GradeResult(0.0, {"grading_s": time.perf_counter() - t0}, statuses, log, msg, r.exit_code)

    if r.timed_out:
        return infra(f"the test run timed out after {timeout:g}s")
    if r.exit_code in _BROKEN_RUN_CODES and not parsed.outcomes:
        return infra(f"{_BROKEN_RUN_CODES[r.exit_code]} (exit {r.exit_code}); test_cmd: {task.test_cmd}")
    started = "test session starts" in strip_ansi(r.stdout)
    if r.exit_code == 127 or (not started and "ImportError while loading conftest" not in out):
        # pytest itself could not start: nothing in the repository decides that
        return infra(f"the test runner could not start (exit {r.exit_code}): {out.strip()[-500:]}")
    if (parsed.collection_errors or not parsed.has_summary) and await repo_untouched(sandbox, task, workdir):
        what = (
            f"collection errors in {', '.join(parsed.collection_errors)}"
            if parsed.collection_errors
            else f"no test summary (exit {r.exit_code})"
        )
        return infra(f"the untouched test suite does not run: {what}")
    # SWE-bench's cross-check: a failing exit status with no failure in the log means the log lies
    consistent = not (
        r.exit_code not in (0, None)
        and statuses
        and not any(v in ("FAILED", "ERROR") for v in statuses.values())
        and not parsed.collection_errors
    )
    reward, metrics = score_statuses(task, statuses, grader, log_consistent=consistent)
    metrics["grading_s"] = time.perf_counter() - t0
    return GradeResult(reward, metrics, statuses, log, None, r.exit_code)
