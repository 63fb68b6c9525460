"""Fixtures for the CLI tests: standalone scripted servers, a test environment project and an isolated venv
for install tests (the SmolLM2 tier's ``smollm`` fixture is in tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli._helpers import BIN, ENV_MODULE, ENV_PYPROJECT, ROOT, SERVER, Server


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start ``tests/scripted_server.py`` as its own process: ``start_server(rules, default=, delay=)``."""
    procs: list[subprocess.Popen[str]] = []

    def start(rules: dict[str, str] | None = None, *, default: str = "wrong", delay: float = 0.0) -> Server:
        path = tmp_path / f"rules-{len(procs)}.json"
        path.write_text(
            json.dumps(
                {"default": default, "rules": [{"match": k, "content": v} for k, v in (rules or {}).items()]}
            )
        )
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--rules", str(path), "--delay", str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        return Server(proc, int(line.split()[1]))

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A working directory holding ``environments/cli_env`` (not installed: found under ./environments)."""
    work = tmp_path / "work"
    pkg = work / "environments" / "cli_env"
    (pkg / "cli_env").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(ENV_PYPROJECT)
    (pkg / "cli_env" / "__init__.py").write_text(ENV_MODULE)
    return work


@pytest.fixture(scope="session")
def isolated_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv that sees this venv's packages (via a .pth line) and has verifiers-sdk installed
    with its own console scripts, so install tests never touch the project's venv."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    uv = shutil.which("uv", path=str(BIN)) or shutil.which("uv")
    if uv:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "_vf_parent_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # A regular (non-editable) install of the code under test: editable builds need `editables`.
    if uv:
        cmd = [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            str(py),
            "--no-deps",
            "--no-build-isolation",
            str(ROOT),
        ]
    else:
        cmd = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(ROOT)]
    subprocess.run(cmd, check=True, capture_output=True)
    assert (venv / "bin" / "vf-install").exists()
    return venv
