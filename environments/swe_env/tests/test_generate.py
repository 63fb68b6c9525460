"""The task generator: mutation operators, determinism per seed, validity of what it keeps, the cache."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest
import swe_env.generate as gen
from swe_env.files import RepoFile, write_tree
from swe_env.generate import (
    BaseRepo,
    GenerationError,
    HostRunner,
    SandboxRunner,
    agenerate_tasks,
    default_repos,
    generate_tasks,
    read_repo,
)
from swe_env.limits import sandbox_limits
from swe_env.mutate import OPERATORS, apply_mutation, find_mutations
from swe_env.sources import load_tasks

from verifiers.sandbox import SandboxPool, get_backend

SOURCE = '''def clamp(x, lo=0, hi=10, strict=False):
    """Clamp x."""
    if strict and lo > hi:
        raise ValueError("lo > hi")
    if x < lo:
        return lo
    total = max(lo, min(x, hi))
    for i in range(len([x])):
        total = total - 0
    return total
'''

REPO = {
    "mini/__init__.py": "",
    "mini/core.py": SOURCE,
    "tests/test_core.py": (
        "from mini.core import clamp\n\n\ndef test_low():\n    assert clamp(-5) == 0\n\n\n"
        "def test_high():\n    assert clamp(50) == 10\n\n\ndef test_mid():\n    assert clamp(5) == 5\n\n\n"
        "def test_custom():\n    assert clamp(3, 4, 8) == 4\n"
    ),
}


def test_every_operator_finds_mutations_that_compile() -> None:
    muts = find_mutations("mini/core.py", SOURCE)
    assert {m.operator for m in muts} == set(OPERATORS)
    for m in muts:
        new = apply_mutation(SOURCE, m)
        assert new != SOURCE
        ast.parse(new)
    # only the covered lines when coverage is given
    assert {m.lineno for m in find_mutations("mini/core.py", SOURCE, covered={5})} == {5}


def test_mutations_are_minimal_edits() -> None:
    flips = [
        m for m in find_mutations("mini/core.py", SOURCE) if m.operator == "flip_comparison" and m.lineno == 5
    ]
    assert [apply_mutation(SOURCE, m).splitlines()[4] for m in flips] == ["    if x >= lo:"]


def _write(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


async def _generate(backend: str, repos: list[BaseRepo], n: int, seed: int) -> list[gen.SweTask]:
    async with SandboxPool(get_backend(backend), size=2, limits=sandbox_limits()) as pool:
        return await agenerate_tasks(repos, SandboxRunner(pool), num_tasks=n, seed=seed, window=4)


@pytest.mark.sandbox
async def test_generation_is_deterministic_and_valid(fast_backend: str, tmp_path: Path) -> None:
    repos = [read_repo(_write(tmp_path / "mini", REPO)), default_repos()[0]]
    a = await _generate(fast_backend, repos, 5, seed=1)
    b = await _generate(fast_backend, repos, 5, seed=1)
    assert len(a) == 5
    assert [(t.task_id, t.gold_patch, t.fail_to_pass) for t in a] == [
        (t.task_id, t.gold_patch, t.fail_to_pass) for t in b
    ]
    c = await _generate(fast_backend, repos, 5, seed=2)
    assert [t.task_id for t in c] != [t.task_id for t in a]
    for t in a:
        _check_valid(t, repos, tmp_path, fast_backend)


def _check_valid(t: gen.SweTask, repos: list[BaseRepo], tmp_path: Path, backend: str) -> None:
    assert t.source == "generated" and t.meta["checked_in"] == f"sandbox:{backend}"
    assert t.fail_to_pass and t.pass_to_pass and set(t.expected) == {*t.fail_to_pass, *t.pass_to_pass}
    # the failing tests are hidden, the statement names them but not the code
    assert {f.split("::")[0] for f in t.fail_to_pass} <= set(t.hidden_tests)
    assert not set(t.hidden_tests) & set(t.repo_files)
    assert t.fail_to_pass[0] in t.problem_statement
    # the gold patch turns the mutant back into the original repository
    work = _write(tmp_path / t.task_id, dict(t.repo_files))
    assert t.gold_patch
    subprocess.run(["git", "apply", "-"], cwd=work, input=t.gold_patch, text=True, check=True)
    base = next(r for r in repos if r.name == t.meta["library"])
    path = str(t.meta["path"])
    assert (work / path).read_text() == base.files[path]
    removed = [
        ln[1:].strip() for ln in t.gold_patch.splitlines() if ln.startswith("-") and not ln.startswith("---")
    ]
    assert all(r not in t.problem_statement for r in removed if len(r) > 8)


def test_a_repository_whose_tests_fail_is_refused(tmp_path: Path) -> None:
    bad = dict(REPO)
    bad["tests/test_core.py"] += "\n\ndef test_broken():\n    assert clamp(1) == 2\n"
    repo = read_repo(_write(tmp_path / "bad", bad))
    import asyncio

    with pytest.raises(GenerationError, match="must pass"):
        asyncio.run(agenerate_tasks([repo], HostRunner(), num_tasks=1))


def test_cache_and_load_tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host generation (explicitly allowed) is cached by (content, seed, N) and served from disk."""
    monkeypatch.setenv("SWE_ENV_CACHE_DIR", str(tmp_path / "cache"))
    repo_dir = _write(tmp_path / "mini", REPO)
    first = generate_tasks([repo_dir], num_tasks=3, seed=0, allow_host=True)
    assert len(first) == 3 and all(t.meta["checked_in"] == "host" for t in first)
    assert len(list((tmp_path / "cache" / "generated").glob("*.json"))) == 1

    def no_generation(*args: object, **kwargs: object) -> None:
        raise AssertionError("the second load must come from the cache")

    monkeypatch.setattr(gen, "agenerate_tasks", no_generation)
    again = generate_tasks([repo_dir], num_tasks=3, seed=0, allow_host=True)
    assert again == first
    # a changed repository is a different key
    (repo_dir / "README.md").write_text("changed\n")
    with pytest.raises(AssertionError, match="from the cache"):
        generate_tasks([repo_dir], num_tasks=3, seed=0, allow_host=True)
    # load_tasks goes through the same cache
    monkeypatch.setattr(gen, "agenerate_tasks", no_generation)
    (repo_dir / "README.md").unlink()
    monkeypatch.setattr(gen, "generate_tasks", lambda **kw: generate_tasks(**kw, allow_host=True))
    assert load_tasks("generated", repos=[repo_dir], num_tasks=3) == first


def test_generated_tasks_keep_binary_files_symlinks_and_modes(tmp_path: Path) -> None:
    """A user's repository with a binary data file, a symlink and an executable script that its tests
    use: every generated task carries all three (through the host run, the gold patch and the cache)."""
    repo_dir = _write(tmp_path / "mini", REPO)
    write_tree(
        repo_dir,
        {
            "mini/data.bin": RepoFile(b"\x00\xff" * 64),
            "tools/check": RepoFile(b"#!/bin/sh\nexit 0\n", 0o755),
            "README": RepoFile(symlink="mini/core.py"),
            "tests/test_files.py": (
                "import os, pathlib, subprocess\n\n\ndef test_files():\n"
                "    assert pathlib.Path('mini/data.bin').read_bytes() == b'\\x00\\xff' * 64\n"
                "    assert os.path.islink('README')\n"
                "    assert subprocess.run(['tools/check']).returncode == 0\n"
            ),
        },
    )
    tasks = generate_tasks([repo_dir], num_tasks=2, seed=0, allow_host=True, use_cache=False)
    assert len(tasks) == 2
    for t in tasks:
        files = {**t.repo_files, **t.hidden_tests}
        assert files["mini/data.bin"] == RepoFile(b"\x00\xff" * 64)
        assert files["tools/check"] == RepoFile(b"#!/bin/sh\nexit 0\n", 0o755)
        assert files["README"] == RepoFile(symlink="mini/core.py")
        assert "tests/test_files.py::test_files" in t.pass_to_pass
        assert gen.task_from_json(json.loads(json.dumps(gen.task_to_json(t)))) == t
