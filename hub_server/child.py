"""One short-lived Python child whose answer is one JSON object on stdout: where the hub parses or renders
hostile input (``source_check``'s ``ast.parse``, ``readme``'s rendering), so that memory, CPU and time
limits (the child sets them on itself first) bound the work and no request thread can hang on it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_json_child(args: list[str], stdin: bytes, *, timeout: float) -> dict[str, Any] | None:
    """``python -I ARGS`` with ``stdin``; its JSON object, or None when it failed, was killed by one of
    its limits, timed out, or wrote anything else."""
    try:
        proc = subprocess.run(
            [sys.executable, "-I", *args], input=stdin, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    try:
        value = json.loads(proc.stdout)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
