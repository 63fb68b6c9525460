"""The bundled tasks, the task format, dataset rows, and the R2E-Gym / SWE-bench row adapters."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from swe_env.adapters import UnsupportedRowError, r2e_row_to_task, swebench_image, swebench_row_to_task
from swe_env.grading import is_test_path
from swe_env.sources import load_tasks
from swe_env.task import SweTask, bundled_tasks_dir, load_task_dir, task_to_row


def test_at_least_eight_bundled_tasks_over_distinct_libraries() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 8
    assert len({t.meta["library"] for t in tasks}) == len(tasks)
    assert [t.task_id for t in tasks] == sorted(t.task_id for t in tasks)  # a stable order


@pytest.mark.parametrize("task", load_tasks(), ids=lambda t: t.task_id)
def test_bundled_task_is_consistent(task: SweTask, tmp_path: Path) -> None:
    assert task.source == "bundled" and task.image is None and task.test_ids == "nodeid"
    assert task.fail_to_pass and task.pass_to_pass
    assert set(task.expected) == {*task.fail_to_pass, *task.pass_to_pass}
    assert set(task.expected.values()) == {"PASSED"}
    assert not set(task.hidden_tests) & set(task.repo_files), "hidden tests must not ship in the repo"
    assert all(is_test_path(p) for p in task.hidden_tests)
    # every F2P test lives in a hidden test file, so the agent cannot see it fail
    assert {t.split("::")[0] for t in task.fail_to_pass} <= set(task.hidden_tests) | set(task.repo_files)
    assert task.test_cmd.startswith("python -m pytest -rA")
    # the statement is an issue, and does not contain the fix
    assert task.problem_statement.startswith("# ")
    assert task.gold_patch
    added = [
        line[1:].strip()
        for line in task.gold_patch.splitlines()
        if line.startswith("+") and not line.startswith("+++") and len(line[1:].strip()) > 12
    ]
    for line in added:
        assert line not in task.problem_statement, f"the statement reveals the fix: {line!r}"
    # the gold patch applies to the repository and touches no test file
    for path, text in task.repo_files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    r = subprocess.run(
        ["git", "apply", "--check", "-"], cwd=tmp_path, input=task.gold_patch, text=True, capture_output=True
    )
    assert r.returncode == 0, r.stderr
    touched = re.findall(r"^\+\+\+ b/(\S+)", task.gold_patch, re.M)
    assert touched and not any(is_test_path(p) for p in touched)


def test_task_files_are_plain_text() -> None:
    for p in bundled_tasks_dir().rglob("*"):
        if p.is_file():
            assert "__pycache__" not in p.parts and p.suffix != ".pyc"
            p.read_text(encoding="utf-8")  # no binary blobs
    assert not any(p.name == ".git" for p in bundled_tasks_dir().rglob(".git"))


def test_task_to_row_follows_the_dataset_contract() -> None:
    task = load_tasks()[0]
    row = task_to_row(task, 7)
    assert row["example_id"] == 7 and row["answer"] == "" and row["task"] == "swe"
    assert row["question"] == task.problem_statement
    assert row["info"]["task_id"] == task.task_id
    json.dumps(row)  # a row is JSON


def test_load_tasks_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown task source"):
        load_tasks("nope")
    with pytest.raises(ValueError, match="needs `rows`"):
        load_tasks("r2e")
    with pytest.raises(ValueError, match="only for source='generated'"):
        load_tasks("bundled", repos=["x"])
    assert len(load_tasks(num_tasks=3)) == 3


def test_task_dir_round_trip_and_validation(tmp_path: Path) -> None:
    d = tmp_path / "my-task"
    (d / "repo" / "pkg").mkdir(parents=True)
    (d / "repo" / "pkg" / "m.py").write_text("X = 1\n")
    (d / "hidden_tests" / "tests").mkdir(parents=True)
    (d / "hidden_tests" / "tests" / "test_m.py").write_text("def test_x():\n    pass\n")
    (d / "problem_statement.md").write_text("# X is wrong\n")
    (d / "test_cmd").write_text("python -m pytest -rA tests\n")
    (d / "expected.json").write_text(json.dumps({"tests/test_m.py::test_x": "PASSED"}))
    t = load_task_dir(d)
    assert t.task_id == "my-task" and t.pass_to_pass == ("tests/test_m.py::test_x",) and t.gold_patch is None
    (d / "expected.json").write_text(json.dumps({"tests/test_m.py::test_x": "OK"}))
    with pytest.raises(ValueError, match="PASSED/FAILED"):
        load_task_dir(d)


# --- adapters --------------------------------------------------------------------------------------
R2E_ROW = {
    "repo_name": "orange3",
    "docker_image": "namanjain12/orange3_final:5a8c2e9c",
    "commit_hash": "5a8c2e9c",
    "problem_statement": "[ISSUE]\nTitle: Table.from_numpy drops the last column\n[/ISSUE]",
    "expected_output_json": json.dumps(
        {
            "TestTable.test_from_numpy": "PASSED",
            "TestTable.test_x[\x1b[1m1-2\x1b[0m]": "PASSED",
            "test_old": "FAILED",
        }
    ),
}


def test_r2e_row_with_an_image_is_refused_naming_the_image() -> None:
    with pytest.raises(UnsupportedRowError, match=r"namanjain12/orange3_final:5a8c2e9c.*no Docker"):
        r2e_row_to_task(R2E_ROW)
    with pytest.raises(UnsupportedRowError):
        load_tasks("r2e", rows=[R2E_ROW])


def test_r2e_row_with_inline_repository_converts() -> None:
    row = {
        **R2E_ROW,
        "repo_files": {"pkg/m.py": "X = 1\n"},
        "hidden_tests": {"r2e_tests/test_1.py": "def test_old():\n    assert False\n"},
    }
    t = r2e_row_to_task(row)
    assert t.source == "r2e" and t.test_ids == "r2e" and t.image is None
    assert t.expected == {
        "TestTable.test_from_numpy": "PASSED",
        "TestTable.test_x[1-2]": "PASSED",
        "test_old": "FAILED",
    }
    assert "r2e_tests" in t.test_cmd
    with pytest.raises(ValueError, match="PASSED or FAILED"):
        r2e_row_to_task({**row, "expected_output_json": '{"a": "BROKEN"}'})


SWE_ROW = {
    "instance_id": "astropy__astropy-12907",
    "repo": "astropy/astropy",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "problem_statement": "separability_matrix does not compute separability correctly for nested models",
    "patch": "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n",
    "test_patch": (
        "diff --git a/tests/test_m.py b/tests/test_m.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_m.py\n@@ -0,0 +1,6 @@\n+from m import X\n+\n+\n+def test_x():\n+    assert X == 2\n+\n"
    ),
    "FAIL_TO_PASS": '["tests/test_m.py::test_x"]',
    "PASS_TO_PASS": "[]",
}


def test_swebench_row_is_refused_naming_its_image() -> None:
    with pytest.raises(
        UnsupportedRowError, match=re.escape("swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest")
    ):
        swebench_row_to_task(SWE_ROW)
    assert (
        swebench_image("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    )


def test_swebench_row_with_inline_repository_converts() -> None:
    t = swebench_row_to_task(
        {**SWE_ROW, "repo_files": {"m.py": "X = 1\n"}, "PASS_TO_PASS": ["tests/test_m.py::test_y"]}
    )
    assert t.fail_to_pass == ("tests/test_m.py::test_x",) and t.pass_to_pass == ("tests/test_m.py::test_y",)
    assert t.hidden_tests["tests/test_m.py"].startswith("from m import X")
    assert t.test_cmd.endswith("tests/test_m.py") and t.gold_patch and t.source == "swebench"
    with pytest.raises(ValueError, match="FAIL_TO_PASS is empty"):
        swebench_row_to_task({**SWE_ROW, "FAIL_TO_PASS": "[]"})
    with pytest.raises(ValueError, match="JSON list"):
        swebench_row_to_task({**SWE_ROW, "FAIL_TO_PASS": "[oops"})
