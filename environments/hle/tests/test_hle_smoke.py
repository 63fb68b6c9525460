"""hle passes the hub's publish-time smoke check for real (a sandbox, no network): its
``[tool.verifiers.smoke] env_args`` load the bundled sample and point the judge at the check's own model,
which answers the judge's structured-output request with an object of the verdict's schema."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hub._helpers import smoke_backend
from verifiers.envs.smoke_check import run_smoke_check

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.mark.sandbox
def test_the_hle_wheel_passes_the_smoke_check(tmp_path: Path) -> None:
    backend = smoke_backend()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(PACKAGE),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("hle-*.whl"))
    report = asyncio.run(run_smoke_check(wheel.name, wheel.read_bytes(), backend=backend, timeout_s=300))
    assert report.status == "passed", report.log[-3000:]
    assert '"model_requests": 2' in report.log  # the rollout's request, then the judge's
