"""Generate SWE tasks from a repository whose tests pass: seeded mutations that some tests catch.

For each base repository (default: the bundled tasks with their gold patch applied and their hidden tests
in place) the generator

1. runs the test suite once with a line tracer to learn which lines the tests execute;
2. lists every mutation of ``swe_env.mutate`` on those lines, shuffled with ``random.Random(seed, repo)``;
3. runs the tests on each mutant and keeps it only if some tests now fail (they become FAIL_TO_PASS) and
   all the others still pass (PASS_TO_PASS) — same tests collected, no collection error, no timeout;
4. writes an issue-style statement from the failing tests' names and assertion messages (never the
   mutated code), hides the test files that hold a failing test, and makes the reverse diff the gold patch.

Candidates of all repositories are interleaved round-robin and the first ``num_tasks`` kept ones win, so
the output depends only on (repositories, seed, num_tasks), not on the concurrency. Tests run in a
sandbox pool (``backend``), or on the host in temporary directories with ``allow_host=True`` (faster,
not isolated: generated tasks record ``meta["checked_in"]``; ``python -m swe_env.validate`` re-checks
them in a sandbox). Results are cached in ``$SWE_ENV_CACHE_DIR`` (default ``~/.cache/swe-env``) keyed by
the repositories' content hash, the seed, ``num_tasks`` and the generator's source.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import logging
import os
import random
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar

from swe_env.files import (
    FileEntry,
    files_from_json,
    files_hash,
    files_to_json,
    read_tree,
    tar_of_files,
    text_of,
    with_text,
    write_tree,
)
from swe_env.grading import is_test_path
from swe_env.limits import sandbox_limits
from swe_env.mutate import Mutation, apply_mutation, find_mutations
from swe_env.repo import RUNNER_PREFIX, install_runner
from swe_env.task import SweTask, load_bundled
from swe_env.testlog import TestLog, parse_pytest_summary

log = logging.getLogger("swe_env.generate")

#: Bump when the generator's output for the same input changes (invalidates the cache).
GENERATOR_VERSION = 1
DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider tests"
_COVERAGE_SCRIPT = ".swe_coverage.py"
_COVERAGE_MARK = "SWE_ENV_COVERAGE "
# Runs pytest in-process under a line tracer limited to the repository; prints the lines it saw.
_COVERAGE_SOURCE = r"""
import json, os, sys, threading
root = os.getcwd() + os.sep
hits = {}
def tracer(frame, event, arg):
    name = frame.f_code.co_filename
    if not name.startswith(root):
        return None
    if event == "line":
        hits.setdefault(name, set()).add(frame.f_lineno)
    return tracer
sys.settrace(tracer)
threading.settrace(tracer)
import pytest
code = pytest.main(sys.argv[1:])
sys.settrace(None)
out = {os.path.relpath(k, root).replace(os.sep, "/"): sorted(v) for k, v in hits.items()}
print("SWE_ENV_COVERAGE " + json.dumps(out))
sys.exit(code)
"""

#: a wide terminal, so that pytest's short summary keeps whole assertion messages for the issue text
_RUN_ENV = {"COLUMNS": "300"}

T = TypeVar("T")


class GenerationError(RuntimeError):
    """A base repository cannot be used (its tests do not pass, or no runner is available)."""


@dataclass(frozen=True)
class RunOutput:
    exit_code: int | None
    stdout: str
    timed_out: bool


class TestRunner(Protocol):
    """Runs a shell command in a fresh copy of a file tree and returns its output."""

    name: str

    async def run(self, files: Mapping[str, FileEntry], command: str, timeout: float) -> RunOutput: ...  # noqa: ASYNC109


class HostRunner:
    """Temporary directories on the host, with this interpreter (and its pytest) first on PATH."""

    name = "host"

    def __init__(self, concurrency: int = 2) -> None:
        self._sem = asyncio.Semaphore(concurrency)

    async def run(self, files: Mapping[str, FileEntry], command: str, timeout: float) -> RunOutput:  # noqa: ASYNC109
        async with self._sem:
            return await asyncio.to_thread(self._run, files, command, timeout)

    def _run(self, files: Mapping[str, FileEntry], command: str, timeout: float) -> RunOutput:
        with tempfile.TemporaryDirectory(prefix="swe-gen-") as tmp:
            write_tree(Path(tmp), files)
            env = {
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "HOME": tmp,
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "LANG": "C.UTF-8",
                **_RUN_ENV,
            }
            try:
                r = subprocess.run(
                    ["/bin/sh", "-c", command],
                    cwd=tmp,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                return RunOutput(None, "", True)
            return RunOutput(r.returncode, r.stdout, False)


class SandboxRunner:
    """One fresh (reset) sandbox of a pool per run, with the bundled pytest."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.name = f"sandbox:{pool.backend_name}"

    async def run(self, files: Mapping[str, FileEntry], command: str, timeout: float) -> RunOutput:  # noqa: ASYNC109
        async with self.pool.lease() as sb:
            await sb.upload_bundle(tar_of_files(files), dest="repo")
            await install_runner(sb)
            r = await sb.exec(RUNNER_PREFIX + command, cwd="repo", timeout=timeout, env=_RUN_ENV)
            return RunOutput(r.exit_code, r.stdout, r.timed_out)


@dataclass(frozen=True)
class BaseRepo:
    name: str
    files: Mapping[str, FileEntry]
    test_cmd: str

    @property
    def content_hash(self) -> str:
        return files_hash({**self.files, "\0test_cmd": self.test_cmd})


def fixed_repo(task: SweTask) -> BaseRepo:
    """A bundled task's repository with its gold patch applied and its hidden tests in place."""
    files = dict(task.repo_files)
    if task.gold_patch:
        with tempfile.TemporaryDirectory(prefix="swe-fix-") as tmp:
            write_tree(Path(tmp), files)
            r = subprocess.run(
                ["git", "apply", "-"], cwd=tmp, input=task.gold_patch, capture_output=True, text=True
            )
            if r.returncode != 0:
                raise GenerationError(f"gold patch of {task.task_id} does not apply: {r.stderr.strip()}")
            files = read_tree(Path(tmp))
    files.update(task.hidden_tests)
    name = str(task.meta.get("library") or task.task_id)
    return BaseRepo(name, files, task.test_cmd)


def read_repo(path: str | Path, test_cmd: str | None = None) -> BaseRepo:
    """A user-given repository directory (a ``test_cmd`` file in it overrides the default command)."""
    root = Path(path)
    if not root.is_dir():
        raise GenerationError(f"{root} is not a directory")
    files = read_tree(root)  # binary files, modes and symlinks included
    own_cmd = text_of(files.pop("test_cmd")) if "test_cmd" in files else None
    cmd = test_cmd or (own_cmd.strip() if own_cmd else DEFAULT_TEST_CMD)
    return BaseRepo(root.name, files, cmd)


def default_repos() -> list[BaseRepo]:
    return [fixed_repo(t) for t in load_bundled()]


def _pytest_args(test_cmd: str) -> list[str] | None:
    argv = shlex.split(test_cmd)
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == "pytest":
            return argv[i + 2 :]
    return None


def _diff(path: str, old: str, new: str) -> str:
    body = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
        )
    )
    return f"diff --git a/{path} b/{path}\n{body}"


def _humanize(test_id: str) -> str:
    name = test_id.split("::")[-1]
    return name.removeprefix("test_").replace("_", " ")


def write_statement(library: str, failing: Sequence[str], messages: Mapping[str, str], n_passing: int) -> str:
    """An issue text from the failing behaviour only: test names and their assertion messages."""
    lines = [
        f"# `{library}`: {_humanize(failing[0])} is broken",
        "",
        f"After a recent change to `{library}`, behaviour that used to work no longer does. "
        f"{'This check fails' if len(failing) == 1 else 'These checks fail'}:",
        "",
    ]
    for t in failing[:8]:
        msg = messages.get(t, "").strip()
        if len(msg) > 300:
            msg = msg[:300] + " …"
        lines.append(f"- `{t}`" + (f": {msg}" if msg else ""))
    if len(failing) > 8:
        lines.append(f"- … and {len(failing) - 8} more")
    lines += [
        "",
        f"The other {n_passing} tests still pass. Please fix the library (not the tests) so that the "
        "behaviour above works again without breaking anything else.",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Candidate:
    repo: BaseRepo
    mutation: Mutation


def _make_task(
    cand: _Candidate, mutated: dict[str, FileEntry], result: TestLog, baseline: Sequence[str], checked_in: str
) -> SweTask | None:
    outcomes = result.outcomes
    if not result.has_summary or result.collection_errors or set(outcomes) != set(baseline):
        return None
    f2p = sorted(t for t, v in outcomes.items() if v in ("FAILED", "ERROR"))
    p2p = sorted(t for t, v in outcomes.items() if v == "PASSED")
    if not f2p or not p2p or len(f2p) + len(p2p) != len(outcomes):
        return None
    repo, m = cand.repo, cand.mutation
    failing_files = {t.split("::", 1)[0] for t in f2p}
    hidden = {p: t for p, t in mutated.items() if is_test_path(p) and p in failing_files}
    visible = {p: t for p, t in mutated.items() if p not in hidden}
    digest = hashlib.sha256(f"{repo.content_hash}:{m.key}".encode()).hexdigest()[:10]
    return SweTask(
        task_id=f"{repo.name}-{m.operator.replace('_', '-')}-{digest}",
        problem_statement=write_statement(repo.name, f2p, result.messages, len(p2p)),
        repo_files=visible,
        hidden_tests=hidden,
        expected={t: "PASSED" for t in sorted(outcomes)},
        fail_to_pass=tuple(f2p),
        pass_to_pass=tuple(p2p),
        test_cmd=repo.test_cmd,
        gold_patch=_diff(m.path, text_of(mutated[m.path]) or "", text_of(repo.files[m.path]) or ""),
        source="generated",
        meta={
            "library": repo.name,
            "operator": m.operator,
            "function": m.function,
            "path": m.path,
            "line": m.lineno,
            "mutation": m.description,
            "checked_in": checked_in,
        },
    )


async def _baseline(
    runner: TestRunner,
    repo: BaseRepo,
    timeout: float,  # noqa: ASYNC109 - per test run
) -> tuple[list[str], dict[str, set[int]]]:
    """The repository's passing tests and, when the command is plain pytest, the lines they execute."""
    args = _pytest_args(repo.test_cmd)
    if args is not None:
        files = {**repo.files, _COVERAGE_SCRIPT: _COVERAGE_SOURCE}
        cmd = f"python {_COVERAGE_SCRIPT} {shlex.join(args)}"
    else:
        files, cmd = dict(repo.files), repo.test_cmd
    out = await runner.run(files, cmd, timeout)
    parsed = parse_pytest_summary(out.stdout)
    bad = {t: v for t, v in parsed.outcomes.items() if v not in ("PASSED", "SKIPPED", "XFAIL")}
    if out.timed_out or not parsed.has_summary or bad or parsed.collection_errors or not parsed.outcomes:
        raise GenerationError(
            f"the tests of {repo.name} must pass before mutating it "
            f"(timed out={out.timed_out}, failing={sorted(bad)[:5]}, collection errors={parsed.collection_errors}): "
            f"{out.stdout[-1500:]}"
        )
    covered: dict[str, set[int]] = {}
    for line in out.stdout.splitlines():
        if line.startswith(_COVERAGE_MARK):
            covered = {k: set(v) for k, v in json.loads(line[len(_COVERAGE_MARK) :]).items()}
    passing = sorted(t for t, v in parsed.outcomes.items() if v == "PASSED")
    return passing, covered


def _candidates(repo: BaseRepo, covered: Mapping[str, set[int]], seed: int) -> list[_Candidate]:
    out: list[_Candidate] = []
    for path in sorted(repo.files):
        if not path.endswith(".py") or is_test_path(path) or path.startswith("."):
            continue
        lines = covered.get(path) if covered else None
        if covered and lines is None:
            continue  # never executed by the tests
        src = text_of(repo.files[path])
        if src is None:
            continue  # a symlink, or not UTF-8
        try:
            muts = find_mutations(path, src, lines)
        except SyntaxError:
            continue
        out.extend(_Candidate(repo, m) for m in muts)
    random.Random(f"{seed}:{repo.content_hash}").shuffle(out)
    return out


def _interleave(groups: Sequence[Sequence[_Candidate]]) -> list[_Candidate]:
    out: list[_Candidate] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


async def agenerate_tasks(
    repos: Sequence[BaseRepo],
    runner: TestRunner,
    *,
    num_tasks: int | None = None,
    seed: int = 0,
    timeout: float = 60.0,  # noqa: ASYNC109 - per test run of the unmutated repository
    mutant_timeout: float = 15.0,
    window: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> list[SweTask]:
    """The generated tasks (see the module docstring); ``num_tasks=None`` keeps every valid mutant."""
    baselines = await asyncio.gather(*(_baseline(runner, r, timeout) for r in repos))
    by_repo = {r.content_hash: b for r, b in zip(repos, baselines, strict=True)}
    order = _interleave([_candidates(r, cov, seed) for r, (_, cov) in zip(repos, baselines, strict=True)])
    kept: list[SweTask] = []
    seen_ids: set[str] = set()

    async def evaluate(c: _Candidate) -> SweTask | None:
        src = text_of(c.repo.files[c.mutation.path]) or ""
        new = apply_mutation(src, c.mutation)
        if new == src:
            return None
        try:
            compile(new, c.mutation.path, "exec")
        except SyntaxError:
            return None
        mutated = {**c.repo.files, c.mutation.path: with_text(c.repo.files[c.mutation.path], new)}
        # a mutant that loops forever is common (a flipped loop condition): it is dropped, not waited for
        out = await runner.run(mutated, c.repo.test_cmd, mutant_timeout)
        if out.timed_out:
            return None
        return _make_task(
            c, mutated, parse_pytest_summary(out.stdout), by_repo[c.repo.content_hash][0], runner.name
        )

    for start in range(0, len(order), window):
        batch = order[start : start + window]
        for task in await asyncio.gather(*(evaluate(c) for c in batch)):
            if task is not None and task.task_id not in seen_ids:
                seen_ids.add(task.task_id)
                kept.append(task)
        tried = min(start + window, len(order))
        log.info("generate: %d/%d candidates tried, %d kept", tried, len(order), len(kept))
        if progress is not None:
            progress(tried, len(kept))
        if num_tasks is not None and len(kept) >= num_tasks:
            break
    return kept if num_tasks is None else kept[:num_tasks]


# --- cache -----------------------------------------------------------------------------------------
def cache_dir() -> Path:
    return Path(os.environ.get("SWE_ENV_CACHE_DIR") or Path.home() / ".cache" / "swe-env") / "generated"


def cache_key(repos: Sequence[BaseRepo], seed: int, num_tasks: int | None) -> str:
    h = hashlib.sha256(f"v{GENERATOR_VERSION}:{seed}:{num_tasks}".encode())
    # the generator's own code is part of the key: a changed operator must not serve stale tasks
    for mod in ("generate.py", "mutate.py"):
        h.update((Path(__file__).parent / mod).read_bytes())
    for r in repos:
        h.update(r.content_hash.encode())
    return h.hexdigest()[:24]


def task_to_json(task: SweTask) -> dict[str, Any]:
    d = {f.name: getattr(task, f.name) for f in fields(task)}
    d["fail_to_pass"], d["pass_to_pass"] = list(task.fail_to_pass), list(task.pass_to_pass)
    d["repo_files"], d["hidden_tests"] = files_to_json(task.repo_files), files_to_json(task.hidden_tests)
    d["expected"], d["meta"] = dict(task.expected), dict(task.meta)
    return d


def task_from_json(d: Mapping[str, Any]) -> SweTask:
    return SweTask(
        **{
            **d,
            "repo_files": files_from_json(d["repo_files"], "repo_files"),
            "hidden_tests": files_from_json(d["hidden_tests"], "hidden_tests"),
            "fail_to_pass": tuple(d["fail_to_pass"]),
            "pass_to_pass": tuple(d["pass_to_pass"]),
        }
    )


def _read_cache(path: Path) -> list[SweTask] | None:
    if not path.exists():
        return None
    try:
        return [task_from_json(d) for d in json.loads(path.read_text(encoding="utf-8"))["tasks"]]
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable cache %s: %s", path, exc)
        return None


def _run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from sync code, also when the caller is inside an event loop (in a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target, name="swe-env-generate")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


async def _generate_in_sandbox(
    repos: Sequence[BaseRepo], num_tasks: int | None, seed: int, backend: str | None, pool_size: int
) -> list[SweTask]:
    from verifiers.sandbox import SandboxPool, get_backend

    # the limits of rollouts and validation: a mutant is checked where its task will be graded
    async with SandboxPool(get_backend(backend), size=pool_size, limits=sandbox_limits()) as pool:
        return await agenerate_tasks(
            repos, SandboxRunner(pool), num_tasks=num_tasks, seed=seed, window=pool_size * 2
        )


def generate_tasks(
    repos: Sequence[str | Path] | None = None,
    num_tasks: int | None = None,
    seed: int = 0,
    *,
    backend: str | None = None,
    allow_host: bool = False,
    use_cache: bool = True,
    pool_size: int = 4,
) -> list[SweTask]:
    """Generated tasks for ``repos`` (directories; default: the bundled tasks' fixed repositories).

    Loaded from the on-disk cache when this (repositories, seed, num_tasks) was generated before.
    """
    bases = [read_repo(p) for p in repos] if repos else default_repos()
    path = cache_dir() / f"{cache_key(bases, seed, num_tasks)}.json"
    if use_cache:
        # the first N kept of a complete run are exactly what a run for N keeps: either file serves
        for candidate in (path, cache_dir() / f"{cache_key(bases, seed, None)}.json"):
            cached = _read_cache(candidate)
            if cached is not None:
                return cached if num_tasks is None else cached[:num_tasks]
    if allow_host:
        tasks = _run_sync(lambda: agenerate_tasks(bases, HostRunner(), num_tasks=num_tasks, seed=seed))
    else:
        tasks = _run_sync(lambda: _generate_in_sandbox(bases, num_tasks, seed, backend, pool_size))
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        payload = {"generator_version": GENERATOR_VERSION, "seed": seed, "num_tasks": num_tasks}
        tmp.write_text(json.dumps({**payload, "tasks": [task_to_json(t) for t in tasks]}), encoding="utf-8")
        tmp.replace(path)
    return tasks
