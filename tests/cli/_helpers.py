"""Helpers for the CLI tests: the real console scripts, run directories and the test environment project
(the SmolLM2 availability check is in tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "scripted_server.py"
BIN = Path(sys.executable).parent


def script(name: str) -> str:
    """The console script installed next to this interpreter (``.venv/bin/vf-eval``)."""
    found = shutil.which(name, path=str(BIN))
    if found is None:
        pytest.fail(f"console script {name} is not installed in {BIN}: pip install -e .")
    return found


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "VF_TEST_KEY")}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def run_cli(
    name: str, *args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> Result:
    """Run a console script to its end; ``timeout`` only guards against a hang (a loaded machine is slow)."""
    proc = subprocess.run(
        [script(name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else clean_env(),
        stdin=subprocess.DEVNULL,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(res: Result, code: int, *needles: str) -> str:
    """The command failed with ``code`` and said so on one line (``<prog>: error: …``), no traceback."""
    assert res.code == code, (res.code, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout
    errors = [line for line in res.err_lines if ": error: " in line]
    assert len(errors) == 1, res.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


# --- standalone scripted servers ---------------------------------------------------------------
class Server:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc, self.port = proc, port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


# --- a test environment project ----------------------------------------------------------------
ENV_MODULE = '''\
"""cli-env: q<i> -> a<i>; the reward checks the reply exactly."""

import verifiers as vf

ROWS = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(6)]


def exact(completion, answer, parser) -> float:
    return 1.0 if (parser.parse_answer(completion) or "") == answer else 0.0


def load_environment(size: int = 6, system_prompt: str | None = None) -> vf.Environment:
    return vf.SingleTurnEnv(
        dataset=lambda: ROWS[:size], system_prompt=system_prompt, rubric=vf.Rubric([exact])
    )
'''

ENV_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "cli-env"
version = "0.3.0"
requires-python = ">=3.11"
dependencies = ["verifiers-sdk>=0.1"]

[project.entry-points."verifiers.environments"]
cli-env = "cli_env:load_environment"

[tool.verifiers.eval]
num_examples = 4
rollouts_per_example = 2
sampling_args = { temperature = 0.25, max_tokens = 7 }
"""

#: The scripted server answers q0 and q1 right, everything else wrong: mean reward 2/6 over all rows.
RULES = {"q0": "a0", "q1": "a1"}


def read_results(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def run_dirs(work: Path) -> list[Path]:
    base = work / "outputs" / "evals"
    return sorted(p for p in base.glob("*/*") if p.is_dir()) if base.is_dir() else []
