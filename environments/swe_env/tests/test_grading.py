"""Grading: the ``-rA`` log parser, both graders' rules, and real grading runs in runsc and bwrap sandboxes
(empty patch 0, gold patch 1, edits to tests discarded, infra errors kept apart from 0)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping

import pytest
from swe_env.grading import grade, is_test_path, score_statuses
from swe_env.limits import sandbox_limits
from swe_env.repo import PatchError, apply_patch, prepare_repo
from swe_env.sources import load_tasks
from swe_env.task import SweTask
from swe_env.testlog import convert_ids, parse_pytest_summary, strip_ansi, to_r2e_id

from verifiers.sandbox import get_backend

ESC = "\x1b"
# What pytest 8/9 prints with colour forced (PY_COLORS=1), trimmed: parametrized ids with spaces, dashes
# and brackets, a class, a collection error, skips with their [N] count, xfail/xpass and a final line.
RA_LOG = f"""{ESC}[1m============================= test session starts ============================={ESC}[0m
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
collected 9 items / 1 error

tests/test_a.py {ESC}[32m.{ESC}[0m{ESC}[31mF{ESC}[0m{ESC}[32m.{ESC}[0m{ESC}[33ms{ESC}[0m                                                   [ 44%]

==================================== FAILURES ===================================
{ESC}[31m{ESC}[1m_______________________________ test_div[1-0] _________________________________{ESC}[0m
E   PASSED this line is test output and must not count
{ESC}[36m{ESC}[1m=========================== short test summary info ============================{ESC}[0m
{ESC}[32mPASSED{ESC}[0m tests/test_a.py::test_add
{ESC}[32mPASSED{ESC}[0m tests/test_a.py::TestWrap::test_width[a b - c]
{ESC}[32mPASSED{ESC}[0m tests/test_a.py::test_path[/tmp/x::y]
{ESC}[31mFAILED{ESC}[0m tests/test_a.py::test_div[1-0] - {ESC}[31mZeroDivisionError: division by zero{ESC}[0m
{ESC}[31mFAILED{ESC}[0m tests/test_a.py::TestWrap::test_long - AssertionError: assert 'x' == 'y'
{ESC}[33mSKIPPED{ESC}[0m [2] tests/test_a.py:40: needs numpy
{ESC}[33mXFAIL{ESC}[0m tests/test_a.py::test_known - reason: bug 12
{ESC}[33mXPASS{ESC}[0m tests/test_a.py::test_lucky
{ESC}[31mERROR{ESC}[0m tests/test_b.py - ModuleNotFoundError: No module named 'yaml'
{ESC}[31mERROR{ESC}[0m tests/test_a.py::test_fixture_boom - RuntimeError: setup failed
{ESC}[31m===== 2 failed, 3 passed, 2 skipped, 1 xfailed, 1 xpassed, 2 errors in 0.31s ====={ESC}[0m
"""


def test_parser_reads_only_the_short_summary_with_ansi_stripped() -> None:
    log = parse_pytest_summary(RA_LOG)
    assert log.has_summary
    assert log.outcomes == {
        "tests/test_a.py::test_add": "PASSED",
        "tests/test_a.py::TestWrap::test_width[a b - c]": "PASSED",
        "tests/test_a.py::test_path[/tmp/x::y]": "PASSED",
        "tests/test_a.py::test_div[1-0]": "FAILED",
        "tests/test_a.py::TestWrap::test_long": "FAILED",
        "tests/test_a.py::test_known": "XFAIL",
        "tests/test_a.py::test_lucky": "XPASS",
        "tests/test_a.py::test_fixture_boom": "ERROR",
    }
    assert log.collection_errors == ("tests/test_b.py",)
    assert log.messages["tests/test_a.py::test_div[1-0]"] == "ZeroDivisionError: division by zero"
    assert ESC not in strip_ansi(RA_LOG)


def test_parser_without_summary_and_last_run_wins() -> None:
    assert not parse_pytest_summary("collected 0 items\nINTERNALERROR> boom\n").has_summary
    failed = f"FAILED{ESC}[0m tests/test_a.py::test_div[1-0] - {ESC}[31mZeroDivisionError: division by zero"
    two = RA_LOG + RA_LOG.replace(failed, f"PASSED{ESC}[0m tests/test_a.py::test_div[1-0]")
    assert parse_pytest_summary(two).outcomes["tests/test_a.py::test_div[1-0]"] == "PASSED"


def test_r2e_ids_drop_the_file_and_join_with_dots() -> None:
    assert to_r2e_id("tests/test_a.py::TestWrap::test_width[a b - c]") == "TestWrap.test_width[a b - c]"
    assert to_r2e_id("tests/test_a.py::test_path[/tmp/x::y]") == "test_path[/tmp/x::y]"
    assert to_r2e_id("r2e_tests/test_1.py::test_x") == "test_x"
    ids = convert_ids(parse_pytest_summary(RA_LOG).outcomes, "r2e")
    assert ids["test_div[1-0]"] == "FAILED" and ids["TestWrap.test_long"] == "FAILED"


def _task(**kw: object) -> SweTask:
    base = SweTask(
        task_id="t",
        problem_statement="p",
        repo_files={},
        hidden_tests={},
        expected={"a": "PASSED", "b": "PASSED", "c": "FAILED"},
        fail_to_pass=("a",),
        pass_to_pass=("b",),
        test_cmd="python -m pytest -rA",
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def test_r2e_rule_needs_every_expected_status_exactly() -> None:
    t = _task()
    assert score_statuses(t, {"a": "PASSED", "b": "PASSED", "c": "FAILED"}, "r2e")[0] == 1.0
    # an expected FAILED is not met by an ERROR, nor by a missing test
    assert score_statuses(t, {"a": "PASSED", "b": "PASSED", "c": "ERROR"}, "r2e")[0] == 0.0
    assert score_statuses(t, {"a": "PASSED", "b": "PASSED"}, "r2e")[0] == 0.0
    reward, metrics = score_statuses(t, {"a": "PASSED", "b": "PASSED", "c": "FAILED", "d": "PASSED"}, "r2e")
    assert reward == 1.0 and metrics["unexpected_tests"] == 1.0


def test_swebench_rule_resolved_full() -> None:
    t = _task()
    reward, m = score_statuses(t, {"a": "PASSED", "b": "SKIPPED"}, "swebench")
    assert reward == 1.0 and m["f2p"] == 1.0 and m["p2p"] == 1.0  # a skipped P2P test is maintained
    reward, m = score_statuses(t, {"a": "SKIPPED", "b": "PASSED"}, "swebench")
    assert reward == 0.0 and m["f2p"] == 0.0  # a skipped F2P test is not resolved
    reward, m = score_statuses(t, {"a": "XFAIL", "b": "FAILED"}, "swebench")
    assert reward == 0.0 and m["f2p"] == 1.0 and m["p2p"] == 0.0
    assert score_statuses(t, {"a": "PASSED", "b": "PASSED"}, "swebench", log_consistent=False)[0] == 0.0


def test_test_paths() -> None:
    assert is_test_path("tests/helpers.py") and is_test_path("pkg/test_x.py") and is_test_path("conftest.py")
    assert not is_test_path("pkg/core.py") and not is_test_path("tests/data.json")


# --- in sandboxes ----------------------------------------------------------------------------------
LIMITS = sandbox_limits()  # what rollouts and validation grade under


def _bundled(task_id: str) -> SweTask:
    return next(t for t in load_tasks() if t.task_id == task_id)


async def _graded(backend: str, task: SweTask, patch: str, **kw: object) -> dict[str, object]:
    async with await get_backend(backend).create(LIMITS) as sb:
        await prepare_repo(sb, task)
        await apply_patch(sb, patch)
        r2e = await grade(sb, task, grader="r2e", **kw)  # type: ignore[arg-type]
        swe = await grade(sb, task, grader="swebench", **kw)  # type: ignore[arg-type]
        diff = (await sb.exec(["git", "status", "--porcelain"], cwd="repo")).stdout
    return {"r2e": r2e, "swe": swe, "status": diff}


@pytest.mark.sandbox
async def test_empty_patch_scores_0_and_gold_1(secure_backend: str) -> None:
    task = _bundled("intervalset-touching-merge")
    assert task.gold_patch
    empty = await _graded(secure_backend, task, "")
    for g in ("r2e", "swe"):
        assert empty[g].reward == 0.0 and empty[g].infra_error is None  # type: ignore[attr-defined]
    assert empty["swe"].metrics["f2p"] == 0.0 and empty["swe"].metrics["p2p"] == 1.0  # type: ignore[attr-defined]
    gold = await _graded(secure_backend, task, task.gold_patch)
    for g in ("r2e", "swe"):
        assert gold[g].reward == 1.0, gold[g].log  # type: ignore[attr-defined]
    # the agent's view: only the fix shows in git, not the runner nor the restored hidden tests' origin
    assert gold["status"].splitlines() == [  # type: ignore[attr-defined]
        " M intervalset/core.py",
        "?? tests/test_intervalset_touching.py",
    ]


def _diff(old_files: Mapping[str, str], new_files: Mapping[str, str]) -> str:
    out = []
    for path, new in new_files.items():
        old = old_files.get(path)
        a = f"a/{path}" if old is not None else "/dev/null"
        body = difflib.unified_diff((old or "").splitlines(True), new.splitlines(True), a, f"b/{path}")
        out.append(f"diff --git a/{path} b/{path}\n" + ("" if old is not None else "new file mode 100644\n"))
        out.append("".join(body))
    return "".join(out)


def _test_edit_patch(task: SweTask) -> str:
    """A patch that does not fix the bug but rewrites the tests to pass, adds a conftest hook that skips
    every test body, and a ``pytest.py`` that prints a fake all-passed summary."""
    fake = "\n".join(f"print('PASSED {t}')" for t in task.expected)
    return _diff(
        task.repo_files,
        {
            "tests/test_intervalset.py": "def test_ok():\n    pass\n",
            "tests/test_intervalset_touching.py": "def test_touching_intervals_merge():\n    assert True\n",
            "conftest.py": "import pytest\n\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    return True\n",
            "pytest.py": "print('=' * 10 + ' test session starts ' + '=' * 10)\n"
            "print('=' * 10 + ' short test summary info ' + '=' * 10)\n" + fake + "\n",
        },
    )


@pytest.mark.sandbox
async def test_edits_to_tests_are_discarded(secure_backend: str) -> None:
    task = _bundled("intervalset-touching-merge")
    res = await _graded(secure_backend, task, _test_edit_patch(task))
    for g in ("r2e", "swe"):
        assert res[g].reward == 0.0 and res[g].infra_error is None  # type: ignore[attr-defined]
    # the real suite ran: its failing tests are back
    assert res["r2e"].statuses["tests/test_intervalset_touching.py::test_bridge_merges_three"] == "FAILED"  # type: ignore[attr-defined]
    assert res["r2e"].statuses["tests/test_intervalset.py::test_contains"] == "PASSED"  # type: ignore[attr-defined]


def _tiny(**kw: object) -> SweTask:
    base = SweTask(
        task_id="tiny",
        problem_statement="x",
        repo_files={"m.py": "def f():\n    return 1\n"},
        hidden_tests={"tests/test_m.py": "from m import f\n\n\ndef test_f():\n    assert f() == 2\n"},
        expected={"tests/test_m.py::test_f": "PASSED"},
        fail_to_pass=("tests/test_m.py::test_f",),
        pass_to_pass=(),
        test_cmd="python -m pytest -rA -p no:cacheprovider tests",
        gold_patch="--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.sandbox
async def test_infra_errors_are_not_zero(secure_backend: str) -> None:
    # the runner is missing
    res = await _graded(secure_backend, _tiny(test_cmd="no-such-runner -rA tests"), "")
    assert res["r2e"].infra_error and "could not start" in res["r2e"].infra_error  # type: ignore[attr-defined]
    # the untouched suite fails to collect (a hidden test imports what the repository does not have)
    broken = _tiny(hidden_tests={"tests/test_m.py": "import yaml_not_here\n\n\ndef test_f():\n    pass\n"})
    res = await _graded(secure_backend, broken, "")
    assert res["swe"].infra_error and "collection errors" in res["swe"].infra_error  # type: ignore[attr-defined]
    # ... but a patch that breaks the import is the patch's fault: scored, 0
    res = await _graded(
        secure_backend,
        _tiny(),
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return (\n",
    )
    assert res["r2e"].infra_error is None and res["r2e"].reward == 0.0  # type: ignore[attr-defined]
    # the whole run times out
    slow = _tiny(hidden_tests={"tests/test_m.py": "import time\n\n\ndef test_f():\n    time.sleep(30)\n"})
    res = await _graded(secure_backend, slow, "", timeout=3.0)
    assert res["r2e"].infra_error and "timed out" in res["r2e"].infra_error  # type: ignore[attr-defined]
    # pytest itself stops (usage error): infra
    res = await _graded(secure_backend, _tiny(test_cmd="python -m pytest -rA --no-such-flag tests"), "")
    assert res["r2e"].infra_error and "usage error" in res["r2e"].infra_error  # type: ignore[attr-defined]


@pytest.mark.sandbox
async def test_gold_patch_and_bad_patch(fast_backend: str) -> None:
    res = await _graded(fast_backend, _tiny(), _tiny().gold_patch or "")
    assert res["r2e"].reward == 1.0 and res["swe"].reward == 1.0  # type: ignore[attr-defined]
    with pytest.raises(PatchError):
        await _graded(
            fast_backend, _tiny(), "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def g():\n-    nope\n+    x\n"
        )
