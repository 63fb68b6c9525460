"""Putting a task's repository into a sandbox: files, git history, patches and the test runner.

The sandbox's ``python3`` has the standard library only, so the grader brings its own pytest: the host's
installed ``pytest`` (with ``pluggy``, ``iniconfig``, ``packaging``) is packed once per process into a tar
with its byte-code and unpacked to ``$HOME/.swe_runner`` (outside the repository, so ``git diff`` never
shows it). Commands find it through ``RUNNER_PREFIX`` (``export PYTHONPATH=…``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from swe_env.files import FileEntry, files_hash, write_tree

if TYPE_CHECKING:
    from swe_env.task import SweTask

RUNNER_DIR = ".swe_runner"
#: Prepended to a shell command so that ``python -m pytest`` finds the bundled runner.
RUNNER_PREFIX = f'export PYTHONPATH="$HOME/{RUNNER_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"; '
PATCH_FILE = ".swe_patch.diff"
_RUNNER_DISTS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
#: pytest imports pygments only to colour code: the lexers, formatters and styles it never uses stay out
_PYGMENTS_KEEP = {
    "lexers": {"__init__", "_mapping", "python", "diff"},
    "formatters": {"__init__", "_mapping", "terminal"},
    "styles": {"__init__", "_mapping", "default"},
}
#: A fixed identity and date so that the initial commit (and so ``git diff``) is the same everywhere.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "swe-env",
    "GIT_AUTHOR_EMAIL": "swe-env@localhost",
    "GIT_COMMITTER_NAME": "swe-env",
    "GIT_COMMITTER_EMAIL": "swe-env@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class ExecResultLike(Protocol):
    @property
    def exit_code(self) -> int | None: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def timed_out(self) -> bool: ...


class SandboxLike(Protocol):
    """What the task code needs of a ``verifiers.sandbox.Sandbox``."""

    async def exec(
        self,
        command: Sequence[str] | str,
        *,
        stdin: bytes | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's budget, enforced in the sandbox
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResultLike: ...

    async def write_file(self, path: str, data: str | bytes, *, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, *, max_bytes: int = ...) -> bytes: ...

    async def upload_bundle(self, tar_bytes: bytes, dest: str = ".") -> int: ...


class PatchError(ValueError):
    """A patch that does not apply to the repository (its message has git's explanation)."""


def _tree_with_git(files: Mapping[str, FileEntry]) -> bytes:
    """A tar of ``files`` (modes and symlinks kept) plus a ``.git`` holding one commit of them (made on the
    host: one upload instead of several ``git`` processes per sandbox, which cost ~30 ms each under
    gVisor)."""
    with tempfile.TemporaryDirectory(prefix="swe-repo-") as tmp:
        root = Path(tmp)
        write_tree(root, files)
        env = {**os.environ, **_GIT_ENV, "HOME": tmp}
        for argv in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "-A"],
            ["git", "commit", "-q", "--no-verify", "-m", "Initial commit"],
        ):
            subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                here = Path(dirpath)
                # symlinks (to files or directories) go in as links, never followed
                for name in sorted([*filenames, *(d for d in dirnames if (here / d).is_symlink())]):
                    p = here / name
                    tar.add(p, arcname=p.relative_to(root).as_posix(), recursive=False)
        return buf.getvalue()


@functools.lru_cache(maxsize=256)
def _cached_tree(key: str, items: tuple[tuple[str, FileEntry], ...]) -> bytes:
    del key  # part of the cache key only
    return _tree_with_git(dict(items))


def repo_bundle(task: SweTask) -> bytes:
    """The tar (with git history) that ``prepare_repo`` uploads; cached per process."""
    files = dict(task.repo_files)
    return _cached_tree(files_hash(files), tuple(sorted(files.items())))


@functools.lru_cache(maxsize=1)
def runner_bundle() -> bytes:
    """pytest and its pure-Python dependencies from the host, with their byte-code, as a tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for name in _RUNNER_DISTS:
            dist = importlib.metadata.distribution(name)
            site = Path(str(dist.locate_file("")))
            tops: set[str] = set()
            for f in dist.files or ():
                parts = Path(str(f)).parts
                # skip metadata and files outside site-packages (console scripts under ../../bin)
                if not parts or parts[0] == "..":
                    continue
                if parts[0].endswith(".dist-info"):
                    # only the metadata: pluggy and pytest read their own version from it
                    if parts[-1] == "METADATA":
                        tar.add(site / Path(str(f)), arcname=Path(str(f)).as_posix(), recursive=False)
                    continue
                src = site / Path(str(f))
                if src.is_file() and src.suffix != ".pyc" and _runner_file_wanted(Path(str(f)).as_posix()):
                    tar.add(src, arcname=Path(str(f)).as_posix(), recursive=False)
                    tops.add(parts[0])
            # byte-code is not listed in RECORD: add what the host compiled, so imports skip compiling
            for top in sorted(tops):
                if (site / top).is_dir():
                    for pyc in sorted((site / top).rglob("*.pyc")):
                        if _runner_file_wanted(pyc.relative_to(site).as_posix()):
                            tar.add(pyc, arcname=pyc.relative_to(site).as_posix(), recursive=False)
    return buf.getvalue()


def _runner_file_wanted(rel: str) -> bool:
    parts = rel.split("/")
    if parts[0] != "pygments" or len(parts) < 3 or parts[1] not in _PYGMENTS_KEEP:
        return True
    stem = parts[-1].split(".")[0]
    return len(parts) in (3, 4) and stem in _PYGMENTS_KEEP[parts[1]]


async def install_runner(sandbox: SandboxLike) -> None:
    """Unpack the bundled pytest to ``$HOME/.swe_runner`` (see ``RUNNER_PREFIX``)."""
    blob = await asyncio.to_thread(runner_bundle)
    await sandbox.upload_bundle(blob, dest=RUNNER_DIR)


async def prepare_repo(sandbox: SandboxLike, task: SweTask, workdir: str = "repo") -> None:
    """Upload the task's repository to ``workdir`` as a git repository with one commit (so ``git diff``
    shows exactly the agent's changes) and install the test runner next to it."""
    if task.image is not None:
        raise RuntimeError(
            f"task {task.task_id} needs the container image {task.image!r}; this project's sandboxes "
            "cannot run container images"
        )
    blob = await asyncio.to_thread(repo_bundle, task)
    await sandbox.upload_bundle(blob, dest=workdir)
    await install_runner(sandbox)


async def apply_patch(sandbox: SandboxLike, patch: str, workdir: str = "repo") -> None:
    """Apply a unified diff to the repository with ``git apply``; an empty patch is a no-op.

    Raises ``PatchError`` with git's message when it does not apply.
    """
    if not patch.strip():
        return
    if not patch.endswith("\n"):
        patch += "\n"
    await sandbox.write_file(PATCH_FILE, patch)
    r = await sandbox.exec(
        ["git", "apply", "--whitespace=nowarn", f"../{PATCH_FILE}"], cwd=workdir, timeout=60
    )
    if r.exit_code != 0:
        # some diffs (e.g. from `diff -u`) need fuzz that git refuses: try patch(1), dry run first so a
        # patch that fails half-way leaves the repository untouched
        base = ["patch", "-p1", "--batch", "--forward", "-i", f"../{PATCH_FILE}"]
        r2 = await sandbox.exec([*base, "--dry-run"], cwd=workdir, timeout=60)
        if r2.exit_code == 0:
            r2 = await sandbox.exec(base, cwd=workdir, timeout=60)
        if r2.exit_code != 0:
            raise PatchError(f"patch does not apply: {(r.stderr or r.stdout).strip()[:2000]}")
