"""Repositories that plain text cannot describe (binary files, symlinks, file modes) and rows from files:
through a task directory, a dataset row, a rows file, the generator's cache, the tar a sandbox unpacks
and, in a sandbox, loading and grading (issue 25, items 2 and 3)."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest
from swe_env.adapters import (
    r2e_row_to_task,
    read_rows,
    swebench_row_to_task,
    task_to_r2e_row,
    task_to_swebench_row,
)
from swe_env.files import RepoFile, files_from_json, read_tree, tar_of_files, write_tree
from swe_env.generate import task_from_json, task_to_json
from swe_env.repo import repo_bundle
from swe_env.sources import load_tasks
from swe_env.task import load_task_dir
from swe_env.validate import validate_tasks
from swe_testing import BLOB, FILES_TASK


def _tar_members(blob: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(blob)) as tf:
        return {m.name: m for m in tf.getmembers()}


def test_a_task_directory_keeps_binary_files_symlinks_and_modes(tmp_path: Path) -> None:
    d = tmp_path / "blob-task"
    write_tree(d / "repo", FILES_TASK.repo_files)
    write_tree(d / "hidden_tests", FILES_TASK.hidden_tests)
    (d / "problem_statement.md").write_text(FILES_TASK.problem_statement)
    (d / "test_cmd").write_text(FILES_TASK.test_cmd + "\n")
    (d / "expected.json").write_text(json.dumps(dict(FILES_TASK.expected)))
    assert os.path.islink(d / "repo" / "README") and os.access(d / "repo" / "bin" / "blobtool", os.X_OK)
    t = load_task_dir(d)
    assert t.repo_files["blobtool/data/table.bin"] == RepoFile(BLOB)
    assert t.repo_files["README"] == RepoFile(symlink="README.md")
    assert t.repo_files["bin/blobtool"] == FILES_TASK.repo_files["bin/blobtool"]
    assert t.repo_files["README.md"] == "blobtool: reads a binary table\n"  # plain text stays a str
    assert t.hidden_tests == FILES_TASK.hidden_tests


def test_the_uploaded_repository_keeps_them_with_its_git_history() -> None:
    members = _tar_members(repo_bundle(FILES_TASK))
    assert members["README"].issym() and members["README"].linkname == "README.md"
    assert members["bin/blobtool"].mode & stat.S_IXUSR
    assert members["blobtool/data/table.bin"].size == len(BLOB)
    assert any(name.startswith(".git/objects/") for name in members)
    hidden = _tar_members(tar_of_files(FILES_TASK.hidden_tests))
    assert hidden["tests/fixtures/magic"].issym() and hidden["tests/fixtures/magic.bin"].size == 4


def test_a_tree_round_trips_through_disk(tmp_path: Path) -> None:
    files = {**FILES_TASK.repo_files, "pkg/dirlink": RepoFile(symlink="../blobtool")}
    write_tree(tmp_path, files)
    assert read_tree(tmp_path) == files


def test_row_entries_carry_bytes_modes_and_symlinks() -> None:
    files = files_from_json(
        {
            "a.py": "X = 1\n",
            "run.sh": {"text": "#!/bin/sh\necho hi\n", "mode": "100755"},
            "blob.bin": {"base64": "AAEC/w==", "mode": "644"},
            "link": {"symlink": "a.py"},
            "same.txt": {"text": "plain\n"},
        },
        "row",
    )
    assert files == {
        "a.py": "X = 1\n",
        "run.sh": RepoFile(b"#!/bin/sh\necho hi\n", 0o755),
        "blob.bin": RepoFile(b"\x00\x01\x02\xff"),
        "link": RepoFile(symlink="a.py"),
        "same.txt": "plain\n",
    }
    bad = [
        ({"x": {"symlink": "../../etc/passwd"}}, "must point inside the repository"),
        ({"x": {"symlink": "/etc/passwd"}}, "must point inside the repository"),
        ({"../x": "t"}, "not a relative path"),
        ({"x": {"base64": "!!"}}, "not valid base64"),
        ({"x": {"text": "t", "mode": "120000"}}, "not a regular file"),
        ({"x": {"text": "t", "mode": "9"}}, "not octal"),
        ({"x": {"text": "t", "base64": "AA=="}}, "exactly one of"),
        ({"x": 3}, "text or an object"),
    ]
    for value, message in bad:
        with pytest.raises(ValueError, match=message):
            files_from_json(value, "row")


def test_rows_of_both_datasets_round_trip_every_kind_of_file() -> None:
    for task in [FILES_TASK, *load_tasks()]:
        row = json.loads(json.dumps(task_to_swebench_row(task)))  # what a JSON file holds
        assert isinstance(row["FAIL_TO_PASS"], str) and row["test_patch"].startswith("diff --git")
        t = swebench_row_to_task(row)
        assert t.repo_files == task.repo_files and t.hidden_tests == task.hidden_tests, task.task_id
        assert t.expected == task.expected and t.gold_patch == task.gold_patch
        r = r2e_row_to_task(json.loads(json.dumps(task_to_r2e_row(task))))
        assert len(r.expected) == len(task.expected) and r.test_ids == "r2e"
    r2e = r2e_row_to_task(task_to_r2e_row(FILES_TASK))
    assert r2e.hidden_tests["r2e_tests/fixtures/magic.bin"] == RepoFile(b"\x00\x01\x02\x03")
    assert r2e.hidden_tests["r2e_tests/fixtures/magic"] == RepoFile(symlink="magic.bin")
    assert r2e.repo_files["bin/blobtool"].mode == 0o755  # type: ignore[union-attr]


def test_rows_load_from_json_and_json_lines_files(tmp_path: Path) -> None:
    rows = [task_to_swebench_row(FILES_TASK), task_to_swebench_row(load_tasks()[0])]
    listed = tmp_path / "rows.json"
    listed.write_text(json.dumps(rows))
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    for path in (listed, lines, str(lines)):
        tasks = load_tasks("swebench", rows=path)
        assert [t.task_id for t in tasks] == [r["instance_id"] for r in rows]
    (tmp_path / "bad.jsonl").write_text(json.dumps(rows[0]) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a JSON object per line"):
        read_rows(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="cannot read rows"):
        load_tasks("r2e", rows=tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="not one row"):
        load_tasks("swebench", rows=rows[0])  # type: ignore[arg-type]


def test_the_generator_cache_keeps_them() -> None:
    d = json.loads(json.dumps(task_to_json(FILES_TASK)))
    assert task_from_json(d) == FILES_TASK


@pytest.mark.sandbox
async def test_a_repository_with_binaries_symlinks_and_scripts_grades_in_a_sandbox(
    secure_backend: str,
) -> None:
    """Its own tests check the binary's hash, the symlink and the executable bit in the sandbox (they
    pass before the fix: PASS_TO_PASS); the hidden tests read a binary fixture through a symlink. Gold
    1, empty 0, under both graders, for the task and for its rows of both datasets."""
    tasks = [
        FILES_TASK,
        swebench_row_to_task(task_to_swebench_row(FILES_TASK)),
        r2e_row_to_task(task_to_r2e_row(FILES_TASK)),
    ]
    reports = await validate_tasks(tasks, backend=secure_backend, concurrency=2)
    for r in reports:
        assert r.ok, (r.task_id, r.empty, r.gold)
