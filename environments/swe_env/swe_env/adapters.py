"""Rows of R2E-Gym and SWE-bench datasets -> ``SweTask``.

Neither dataset carries the repository itself: an R2E-Gym row names a ``docker_image`` that holds the
repository (at ``/testbed``) and its hidden tests (``/r2e_tests``); a SWE-bench row names a repository and
``base_commit`` whose environment is the image ``swebench/sweb.eval.x86_64.<instance_id>:latest``
(``__`` written ``_1776_``). This machine has no container engine and its sandboxes run the host's
Python, so such a row is refused at load with ``UnsupportedRowError`` naming the image and what is
missing — never graded as 0.

A row that brings its repository inline converts: ``repo_files`` (path -> text) and, for R2E-Gym,
``hidden_tests`` (path -> text, default location ``r2e_tests/``); for SWE-bench the ``test_patch`` is
applied to ``repo_files`` to obtain the hidden tests. ``test_cmd`` may be given; the defaults are
pytest over ``r2e_tests`` (R2E-Gym) or over the files the test patch touches (SWE-bench).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_env.task import STATUSES, SweTask

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


def _as_files(value: Any, field: str, row_id: str) -> dict[str, str]:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{row_id}: {field} must map relative paths to file text")
    return dict(value)


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


def _apply_to_files(files: Mapping[str, str], patch: str, row_id: str) -> dict[str, str]:
    """The files ``patch`` creates or changes, after applying it to ``files`` (with ``git apply``)."""
    touched = sorted({b for _, b in _DIFF_FILE.findall(patch)})
    with tempfile.TemporaryDirectory(prefix="swe-row-") as tmp:
        for name, text in files.items():
            p = Path(tmp, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        r = subprocess.run(["git", "apply", "-"], cwd=tmp, input=patch, capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError(f"{row_id}: test_patch does not apply to repo_files: {r.stderr.strip()[:500]}")
        return {t: Path(tmp, t).read_text(encoding="utf-8") for t in touched if Path(tmp, t).is_file()}


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
    paths = sorted(hidden) or sorted({t.split("::", 1)[0] for t in (*f2p, *p2p)})
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
