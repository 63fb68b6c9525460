"""Every script under benchmarks/ runs at its ``--smoke`` size (benchmarks/_smoke.py), so none can rot unseen.

Scripts are discovered, not listed: a new benchmark is covered the day it lands, and one without ``--smoke``
fails here. Only the exit status counts (a crash or a failed correctness check); the figures a smoke run
prints are never asserted — a benchmark is not a test, and this machine may be loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Helpers the benchmarks start (a server, a job) are prefixed with ``_`` and are not benchmarks.
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
#: Not a time limit on the figures: a guard so that a hung benchmark fails instead of stalling CI.
HANG_GUARD_S = 1800


def test_benchmarks_are_discovered() -> None:
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_runs_at_smoke_size(script: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert proc.returncode == 0, f"{script.name} --smoke exited {proc.returncode}:\n{proc.stdout[-6000:]}"
