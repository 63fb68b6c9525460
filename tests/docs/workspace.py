"""Where the docs' commands run: a workspace laid out like the checkout, a venv of its own, one shell.

- ``make_venv``: a venv over the test venv (a ``.pth`` adds the test venv's site-packages, editable
  installs included, behind its own), with console scripts of its own for every command the test venv
  has (``vf-*``, ``pip``, ``pytest``), so what a command installs lands here and the test venv is never
  touched (pip does not uninstall what lies outside the running environment).
- ``make_workspace``: top-level directories of the checkout as symlinks (files copied), except ``environments/`` and
  ``examples/`` (real directories of symlinks, so ``vf-init`` writes into the workspace) and ``.venv``
  (the venv above, what ``source .venv/bin/activate`` activates).
- ``Shell``: runs commands one by one like one interactive shell would — exported variables and the
  working directory carry from one command to the next (``declare -px`` saved after each) — and starts
  server commands in the background, stopping them (their process groups) at the end.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import os
import re
import shlex
import shutil
import signal
import site
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs.blocks import ROOT

#: Entries of the checkout a workspace never links (build output, venvs, the reader's own runs).
_NOT_LINKED = {".git", ".venv", ".venv-ref", "outputs", "dist", "run", "test-artifacts", ".pytest_cache"}
_REAL_DIRS = ("environments", "examples")
#: Only guards hangs: a slow machine may take minutes for an eval with SmolLM2.
COMMAND_TIMEOUT = 1800.0
SERVER_START_TIMEOUT = 300.0


def make_venv(path: Path) -> Path:
    """A venv at ``path`` over the running (test) venv; returns its ``bin`` directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    bindir = path / "bin"
    python = bindir / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # addsitedir (not a bare path line) so the test venv's own .pth files — editable installs — apply too.
    bases = [p for p in site.getsitepackages() if Path(p).is_dir()]
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in bases)
    (Path(purelib) / "_vf_docs_base_venv.pth").write_text(lines)
    for dist in md.distributions():
        for ep in dist.entry_points.select(group="console_scripts"):
            target = bindir / ep.name
            if target.exists():
                continue
            module, _, attr = ep.value.partition(":")
            attr = attr.split("[")[0].strip()
            top = attr.split(".")[0]
            target.write_text(
                f"#!{python}\nimport sys\nfrom {module.strip()} import {top}\n"
                f"if __name__ == '__main__':\n    sys.exit({attr}())\n"
            )
            target.chmod(0o755)
    return bindir


def make_workspace(path: Path, venv: Path) -> Path:
    path.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name in _NOT_LINKED or entry.name in _REAL_DIRS:
            continue
        if (
            entry.is_file()
        ):  # copied: a build tool may pick up a top-level file (.gitignore) and refuse a link
            shutil.copy2(entry, path / entry.name)
        else:
            (path / entry.name).symlink_to(entry)
    for name in _REAL_DIRS:
        (path / name).mkdir()
        for child in (ROOT / name).iterdir():
            if child.is_dir() and not child.name.startswith("."):
                (path / name / child.name).symlink_to(child)
    (path / ".venv").symlink_to(venv)
    return path


@dataclass
class Result:
    command: str
    code: int
    stdout: str
    stderr: str

    def tail(self, lines: int = 40) -> str:
        out = (self.stdout + "\n" + self.stderr).strip().splitlines()
        return "\n".join(out[-lines:])


@dataclass
class Shell:
    """One shell session in ``cwd`` with ``env``; see the module docstring."""

    cwd: Path
    env: dict[str, str]
    state_dir: Path
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._state = self.state_dir / "env.sh"
        self._pwd = self.state_dir / "pwd"
        self._state.write_text("")
        self._pwd.write_text(str(self.cwd))

    def _script(self, command: str) -> str:
        return (
            f"source {shlex.quote(str(self._state))}\n"
            f'cd "$(cat {shlex.quote(str(self._pwd))})"\n'
            "set -eo pipefail\n"
            f"{command}\n"
            f"declare -px > {shlex.quote(str(self._state))}\n"
            f"pwd > {shlex.quote(str(self._pwd))}\n"
        )

    def run(self, command: str, *, timeout: float = COMMAND_TIMEOUT) -> Result:
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", self._script(command)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
        return Result(command, proc.returncode, proc.stdout, proc.stderr)

    def export(self, name: str, value: str) -> None:
        with self._state.open("a") as f:
            f.write(f"export {name}={shlex.quote(value)}\n")

    def start(self, command: str, ready_url: str, log: Path) -> Result:
        """Start a server command in the background; return once ``ready_url`` answers (any status
        below 500), or the command's failure if it exits first."""
        script = (
            f"source {shlex.quote(str(self._state))}\n"
            f'cd "$(cat {shlex.quote(str(self._pwd))})"\n'
            f"exec {command}\n"
        )
        out = log.open("wb")
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-c", script],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()
        self.servers.append(proc)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return Result(command, proc.returncode or 1, log.read_text(errors="replace"), "")
            if _answers(ready_url):
                return Result(command, 0, "", "")
            time.sleep(0.5)
        return Result(command, 1, log.read_text(errors="replace"), f"{ready_url} did not answer")

    def close(self) -> None:
        for proc in self.servers:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self.servers.clear()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (urllib.error.URLError, OSError):
        return False


def normalized(text: str) -> str:
    """Text without table borders and with runs of whitespace as one space (for transcripts)."""
    return " ".join(re.sub(r"[│┃┆┊║|─━┌┐└┘├┤┬┴┼╭╮╯╰]", " ", text).split())
