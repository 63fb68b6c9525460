"""vf-serve's command line: errors are one line and a non-zero status, before any worker starts."""

from __future__ import annotations

import subprocess
import sys

import pytest


def vf_serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verifiers.cli.serve", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["no-such-env", "--port", "0"], 1, "no environment 'no-such-env'"),
        (["logic-env", "--env-args", "{bad"], 2, "--env-args is not valid JSON"),
        (["logic-env", "--env-args", '{"bogus": 1}', "--port", "0"], 1, "does not accept 'bogus'"),
        (["logic-env", "--max-concurrent", "0"], 2, "--max-concurrent and --workers must be at least 1"),
    ],
)
def test_errors_are_one_line(args: list[str], code: int, message: str) -> None:
    proc = vf_serve(*args)
    assert proc.returncode == code
    assert proc.stderr.startswith("vf-serve: error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_help_names_the_protocols() -> None:
    out = vf_serve("--help").stdout
    assert "--zmq-port" in out and "/rollouts" in out and "--max-concurrent" in out
