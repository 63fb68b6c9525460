"""One SWE task: a buggy repository, its issue text, hidden tests and the statuses a correct fix gives.

Tasks come from four sources (``swe_env.sources.load_tasks``); this module reads the ``bundled`` one
(the project-written tasks under ``swe_env/tasks/``).

The pieces an environment uses: ``load_tasks`` -> ``task_to_row`` for the dataset; per rollout
``swe_env.repo.prepare_repo(sandbox, task)``, the agent works in ``repo/`` (commands that run tests
prefix ``swe_env.repo.RUNNER_PREFIX`` to find pytest), then ``swe_env.grading.grade(sandbox, task,
grader=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from swe_env.files import FileEntry, check_tree, normalized, read_tree
from swe_env.testlog import IdStyle

Status = Literal["PASSED", "FAILED"]
STATUSES: frozenset[str] = frozenset({"PASSED", "FAILED"})


@dataclass(frozen=True)
class SweTask:
    """A repository with a bug, and how to tell that it is fixed."""

    task_id: str
    problem_statement: str
    #: relative path -> entry (text, or a ``RepoFile``: bytes with a mode, or a symlink;
    #: ``swe_env.files``): the buggy repository as the agent sees it (no hidden tests)
    repo_files: Mapping[str, FileEntry]
    #: relative path -> entry, copied into the repository only for grading
    hidden_tests: Mapping[str, FileEntry]
    #: test id -> status after a correct fix (fail-to-pass and pass-to-pass tests)
    expected: Mapping[str, Status]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    #: run from the repository root, e.g. ``python -m pytest -rA -p no:cacheprovider tests/test_x.py``
    test_cmd: str
    #: unified diff (``git apply``-able) from the buggy repository to the fix
    gold_patch: str | None = None
    #: the container image a real-world row needs; None = runs in this project's sandboxes
    image: str | None = None
    source: str = "bundled"
    #: how ``expected``/``fail_to_pass``/``pass_to_pass`` name tests: pytest node ids
    #: (``tests/test_x.py::test_a[1]``, SWE-bench) or R2E-Gym's ``test_a[1]`` (file dropped, ``::`` -> ``.``)
    test_ids: IdStyle = "nodeid"
    #: free-form provenance (repo name, mutation, upstream instance id …); not used for grading
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = {k: v for k, v in self.expected.items() if v not in STATUSES}
        if bad:
            raise ValueError(f"task {self.task_id}: expected statuses must be PASSED/FAILED, got {bad}")
        missing = [t for t in (*self.fail_to_pass, *self.pass_to_pass) if t not in self.expected]
        if missing:
            raise ValueError(f"task {self.task_id}: tests {missing} are not in `expected`")
        # one form per file (plain text as str), so that equal repositories compare and hash equal
        object.__setattr__(self, "repo_files", normalized(self.repo_files))
        object.__setattr__(self, "hidden_tests", normalized(self.hidden_tests))
        check_tree(self.repo_files, f"task {self.task_id}: repo_files")
        check_tree(self.hidden_tests, f"task {self.task_id}: hidden_tests")


def bundled_tasks_dir() -> Path:
    """The directory of the project-written tasks shipped with the package."""
    return Path(str(resources.files("swe_env") / "tasks"))


def load_task_dir(path: str | Path, *, source: str = "bundled") -> SweTask:
    """Read one task directory: ``repo/``, ``problem_statement.md``, ``hidden_tests/``, ``expected.json``,
    ``test_cmd`` and optional ``gold.patch`` (see the README for the layout)."""
    d = Path(path)
    if not (d / "repo").is_dir():
        raise FileNotFoundError(f"{d}: not a task directory (no repo/)")
    expected = json.loads((d / "expected.json").read_text(encoding="utf-8"))
    if not isinstance(expected, dict):
        raise ValueError(f"{d}/expected.json must map test id -> PASSED/FAILED")
    meta_path = d / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    f2p = tuple(meta.get("fail_to_pass") or ())
    p2p = tuple(meta.get("pass_to_pass") or ())
    if not f2p and not p2p:
        # Without an explicit split, a FAILED-before-fix list is unknown: every PASSED test counts as F2P
        # only if meta says so, so default to all expected PASSED tests being "must pass".
        p2p = tuple(t for t, s in expected.items() if s == "PASSED")
    gold = d / "gold.patch"
    return SweTask(
        task_id=d.name,
        problem_statement=(d / "problem_statement.md").read_text(encoding="utf-8").strip() + "\n",
        repo_files=read_tree(d / "repo"),
        hidden_tests=read_tree(d / "hidden_tests"),
        expected=expected,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_cmd=(d / "test_cmd").read_text(encoding="utf-8").strip(),
        gold_patch=gold.read_text(encoding="utf-8") if gold.exists() else None,
        source=source,
        meta=meta,
    )


def load_bundled(root: str | Path | None = None) -> list[SweTask]:
    base = Path(root) if root is not None else bundled_tasks_dir()
    return [load_task_dir(p) for p in sorted(base.iterdir()) if (p / "repo").is_dir()]


def task_to_row(task: SweTask, example_id: int) -> dict[str, Any]:
    """The dataset row (DESIGN.md 3.2) of a task: the issue text as the question; grading is by tests."""
    return {
        "example_id": example_id,
        "question": task.problem_statement,
        "answer": "",
        "task": "swe",
        "info": {
            "task_id": task.task_id,
            "source": task.source,
            "fail_to_pass": list(task.fail_to_pass),
            "pass_to_pass": list(task.pass_to_pass),
            "test_cmd": task.test_cmd,
        },
    }
