"""Rows of R2E-Gym and SWE-bench datasets -> ``SweTask``.

Neither dataset carries the repository itself: an R2E-Gym row names a ``docker_image`` that holds the
repository (at ``/testbed``) and its hidden tests (``/r2e_tests``); a SWE-bench row names a repository and
``base_commit`` whose environment is the image ``swebench/sweb.eval.x86_64.<instance_id>:latest``
(``__`` written ``_1776_``). This machine has no container engine and its sandboxes run the host's
Python, so such a row is refused at load with ``UnsupportedRowError`` naming the image and what is
missing — never graded as 0.

A row that brings its repository inline converts: ``repo_files`` (path -> entry: text, or an object for a
binary file, a file mode or a symlink, see ``swe_env.files``) and, for R2E-Gym, ``hidden_tests`` (the
same, default location ``r2e_tests/``); for SWE-bench the ``test_patch`` is applied to ``repo_files`` to
obtain the hidden tests. ``test_cmd`` may be given; the defaults are pytest over ``r2e_tests`` (R2E-Gym)
or over the files the test patch touches and the files the test ids name (SWE-bench). ``read_rows`` reads
rows from a JSON or JSON Lines file.

The other way, ``task_to_swebench_row`` / ``task_to_r2e_row`` write a task as a row of either dataset
(with its repository inline), e.g. to check a row file with ``python -m swe_env.validate --rows``.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_env.files import FileEntry, files_from_json, files_hash, files_to_json, read_entry, write_tree
from swe_env.task import STATUSES, SweTask
from swe_env.testlog import to_r2e_id

R2E_TEST_CMD = "python -m pytest -rA -p no:cacheprovider r2e_tests"
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


class UnsupportedRowError(ValueError):
    """A dataset row that this machine cannot run (it needs a container image)."""


def _as_list(value: Any, field: str, row_id: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise ValueError(f"{row_id}: {field} is not a JSON list: {exc}") from None
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{row_id}: {field} must be a list of test ids")
    return tuple(value)


def _as_files(value: Any, field: str, row_id: str) -> dict[str, FileEntry]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{row_id}: {field} is not a JSON object: {exc}") from None
    return files_from_json(value, f"{row_id}: {field}")


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Dataset rows from a file: a JSON list of objects, or JSON Lines (one object per line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read rows from {p}: {exc.strerror or exc}") from None
    rows: Any
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: not valid JSON ({exc})") from None
    else:
        rows = []
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}:{no}: not a JSON object per line ({exc.msg})") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{p}: rows must be a JSON list of objects, or one JSON object per line")
    if not rows:
        raise ValueError(f"{p}: no rows")
    return rows


def _refuse(row_id: str, image: str, what: str) -> UnsupportedRowError:
    return UnsupportedRowError(
        f"{row_id}: this row needs the container image {image!r} ({what}); this machine has no Docker/"
        "Podman engine and its sandboxes (runsc, bwrap) run the host's Python, not container images. "
        "Run it where the image can be pulled, or give the row `repo_files` (and hidden tests) inline."
    )


def swebench_image(instance_id: str, namespace: str = "swebench") -> str:
    """The SWE-bench evaluation image of an instance (Docker Hub spells ``__`` as ``_1776_``)."""
    return f"{namespace}/sweb.eval.x86_64.{instance_id}:latest".lower().replace("__", "_1776_")


def r2e_row_to_task(row: Mapping[str, Any]) -> SweTask:
    """An R2E-Gym row (``expected_output_json``, ``problem_statement``, ``docker_image``, …)."""
    image = row.get("docker_image")
    row_id = str(row.get("instance_id") or row.get("task_id") or image or row.get("repo_name") or "r2e row")
    if "expected_output_json" not in row:
        raise ValueError(f"{row_id}: an R2E-Gym row needs `expected_output_json`")
    raw = row["expected_output_json"]
    expected = json.loads(raw) if isinstance(raw, str) else dict(raw)
    # R2E-Gym compares ids with ANSI codes removed and any " - message" tail cut
    expected = {re.sub(r"\x1b\[\d+m", "", k).split(" - ")[0]: v for k, v in expected.items()}
    bad = {k: v for k, v in expected.items() if v not in STATUSES}
    if bad:
        raise ValueError(
            f"{row_id}: expected statuses must be PASSED or FAILED, got {dict(list(bad.items())[:5])}"
        )
    if "repo_files" not in row:
        if image:
            raise _refuse(row_id, str(image), "the repository at /testbed and its hidden tests at /r2e_tests")
        raise ValueError(f"{row_id}: the row has neither `repo_files` nor a `docker_image`")
    problem = row.get("problem_statement") or row.get("issue_contents") or ""
    if not str(problem).strip():
        raise ValueError(f"{row_id}: empty problem_statement")
    return SweTask(
        task_id=row_id.replace("/", "__").replace(":", "-"),
        problem_statement=str(problem),
        repo_files=_as_files(row["repo_files"], "repo_files", row_id),
        hidden_tests=_as_files(row.get("hidden_tests") or {}, "hidden_tests", row_id),
        expected=expected,
        fail_to_pass=(),
        pass_to_pass=tuple(t for t, s in expected.items() if s == "PASSED"),
        test_cmd=str(row.get("test_cmd") or R2E_TEST_CMD),
        gold_patch=row.get("gold_patch") or row.get("patch") or None,
        image=None,
        source="r2e",
        test_ids="r2e",
        meta={
            "repo_name": row.get("repo_name"),
            "docker_image": image,
            "commit_hash": row.get("commit_hash"),
        },
    )


def _apply_to_files(files: Mapping[str, FileEntry], patch: str, row_id: str) -> dict[str, FileEntry]:
    """The files ``patch`` creates or changes, after applying it to ``files`` (with ``git apply``, which
    also applies binary diffs, mode changes and symlinks)."""
    touched = sorted({b for _, b in _DIFF_FILE.findall(patch)})
    with tempfile.TemporaryDirectory(prefix="swe-row-") as tmp:
        write_tree(Path(tmp), files)
        r = subprocess.run(["git", "apply", "-"], cwd=tmp, input=patch, capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError(f"{row_id}: test_patch does not apply to repo_files: {r.stderr.strip()[:500]}")
        out: dict[str, FileEntry] = {}
        for t in touched:
            p = Path(tmp, t)
            entry = read_entry(p) if p.is_symlink() or p.exists() else None
            if entry is not None:
                out[t] = entry
        return out


def swebench_row_to_task(row: Mapping[str, Any]) -> SweTask:
    """A SWE-bench row (``instance_id``, ``repo``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``patch``, ``test_patch``)."""
    row_id = str(row.get("instance_id") or "swebench row")
    for key in ("instance_id", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS"):
        if key not in row:
            raise ValueError(f"{row_id}: a SWE-bench row needs `{key}`")
    f2p = _as_list(row["FAIL_TO_PASS"], "FAIL_TO_PASS", row_id)
    p2p = _as_list(row["PASS_TO_PASS"], "PASS_TO_PASS", row_id)
    if not f2p:
        raise ValueError(f"{row_id}: FAIL_TO_PASS is empty")
    if "repo_files" not in row:
        image = str(row.get("image_name") or swebench_image(row_id))
        what = f"{row.get('repo', 'the repository')} at {str(row.get('base_commit', 'its base commit'))[:12]}"
        raise _refuse(row_id, image, f"{what} with its test environment")
    files = _as_files(row["repo_files"], "repo_files", row_id)
    test_patch = str(row.get("test_patch") or "")
    hidden = _apply_to_files(files, test_patch, row_id) if test_patch.strip() else {}
    # the test patch's Python files (not its fixtures: SWE-bench's harness drops those too), and any
    # other file a test id names (a PASS_TO_PASS test elsewhere)
    paths = sorted({p for p in hidden if p.endswith(".py")} | {t.split("::", 1)[0] for t in (*f2p, *p2p)})
    test_cmd = str(row.get("test_cmd") or f"python -m pytest -rA -p no:cacheprovider {' '.join(paths)}")
    return SweTask(
        task_id=row_id,
        problem_statement=str(row["problem_statement"]),
        repo_files=files,
        hidden_tests=hidden,
        expected={t: "PASSED" for t in (*f2p, *p2p)},
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_cmd=test_cmd,
        gold_patch=str(row["patch"]) if row.get("patch") else None,
        image=None,
        source="swebench",
        test_ids="nodeid",
        meta={"repo": row.get("repo"), "base_commit": row.get("base_commit"), "version": row.get("version")},
    )


# --- tasks -> rows ------------------------------------------------------------------------------------
def _git_diff(before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]) -> str:
    """``git diff --binary`` from one tree to another (binary files, modes and symlinks included)."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}
    with tempfile.TemporaryDirectory(prefix="swe-row-") as tmp:
        root = Path(tmp)
        write_tree(root, before)
        ident = ["-c", "user.name=swe-env", "-c", "user.email=swe-env@localhost"]
        for argv in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-q", "--allow-empty", "-m", "base"]):
            subprocess.run(["git", *argv], cwd=root, env=env, check=True, capture_output=True)
        write_tree(root, after)
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True, capture_output=True)
        r = subprocess.run(
            ["git", "diff", "--cached", "--binary", "--no-renames"], cwd=root, env=env, check=True,
            capture_output=True, text=True,
        )  # fmt: skip
        return r.stdout


def _commit_of(task: SweTask) -> str:
    return files_hash(task.repo_files)[:40]


def task_to_swebench_row(task: SweTask) -> dict[str, Any]:
    """A SWE-bench row of ``task`` (``FAIL_TO_PASS``/``PASS_TO_PASS`` as the dataset's JSON strings, the
    hidden tests as ``test_patch``), with the repository inline as ``repo_files``."""
    if task.test_ids != "nodeid":
        raise ValueError(f"{task.task_id}: SWE-bench rows name tests by pytest node id")
    name = str(task.meta.get("library") or task.meta.get("repo") or task.task_id)
    return {
        "instance_id": f"swe-env__{task.task_id}",
        "repo": f"swe-env/{name}",
        "base_commit": _commit_of(task),
        "environment_setup_commit": _commit_of(task),
        "version": "0.1",
        "created_at": "2024-01-01T00:00:00Z",
        "problem_statement": task.problem_statement,
        "hints_text": "",
        "patch": task.gold_patch or "",
        "test_patch": _git_diff(task.repo_files, {**task.repo_files, **task.hidden_tests}),
        "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
        "PASS_TO_PASS": json.dumps(list(task.pass_to_pass)),
        "repo_files": files_to_json(task.repo_files),
    }


def task_to_r2e_row(task: SweTask) -> dict[str, Any]:
    """An R2E-Gym row of ``task``: tests named as R2E-Gym names them, in ``expected_output_json``; the test
    files of those tests under ``r2e_tests/`` (where R2E-Gym's images keep them) as ``hidden_tests``; the
    repository inline as ``repo_files``."""
    if task.test_ids != "nodeid":
        raise ValueError(f"{task.task_id}: the task's test ids are not pytest node ids")
    files = {**task.repo_files, **task.hidden_tests}
    # the tests' files and the hidden files beside them (fixtures), moved from their test directory to
    # r2e_tests/ (tests/fixtures/x.bin -> r2e_tests/fixtures/x.bin), so relative paths between them hold
    moved = sorted({t.split("::", 1)[0] for t in task.expected} | set(task.hidden_tests))
    hidden: dict[str, FileEntry] = {}
    for path in moved:
        target = "r2e_tests/" + path.split("/", 1)[-1]
        if target in hidden or path not in files:
            raise ValueError(
                f"{task.task_id}: cannot place {path} under r2e_tests/ (a name clash, or missing)"
            )
        hidden[target] = files[path]
    expected = {to_r2e_id(t): s for t, s in task.expected.items()}
    if len(expected) != len(task.expected):
        raise ValueError(f"{task.task_id}: two tests get the same R2E-Gym id (the file name is dropped)")
    name = str(task.meta.get("library") or task.task_id)
    commit = _commit_of(task)
    return {
        "repo_name": name,
        "docker_image": f"swe-env/{name}:{commit[:8]}",
        "commit_hash": commit,
        "problem_statement": task.problem_statement,
        "expected_output_json": json.dumps(expected),
        "patch": task.gold_patch or "",
        "repo_files": files_to_json({p: e for p, e in task.repo_files.items() if p not in moved}),
        "hidden_tests": files_to_json(hidden),
    }
