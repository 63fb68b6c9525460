"""The sandbox limits of swe-env: one set for rollouts (the agent's commands and the grading run),
``python -m swe_env.validate`` and the task generator, so that a task is graded under the limits it was
validated under.

``memory_mb`` is what the sandbox really holds (resident memory of its processes and its tmpfs files,
not address space) and ``max_procs`` counts processes, not threads (``max_threads`` bounds those): a test
suite that starts 100 threads fits the defaults. Override any of them with ``sandbox_limits``
(``load_environment``) or ``--sandbox-limits`` (validation), e.g. ``{"memory_mb": 4096}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from verifiers.sandbox import SandboxLimits

#: swe-env's defaults on top of ``SandboxLimits``' own: room for a real repository's test suite.
DEFAULTS: dict[str, Any] = {
    "memory_mb": 1024,
    "cpu_s": 600,
    "max_procs": 128,
    "max_threads": 1024,
    "workspace_mb": 512,
}


def sandbox_limits(
    command_timeout: float = 60.0, overrides: Mapping[str, Any] | None = None
) -> SandboxLimits:
    """swe-env's limits with ``overrides`` (``SandboxLimits`` fields) on top; ``timeout_s`` is the budget
    of one command (``command_timeout``)."""
    extra = dict(overrides or {})
    if "timeout_s" in extra:
        raise ValueError("sandbox_limits: set a command's budget with command_timeout, not timeout_s")
    try:
        return SandboxLimits(**{**DEFAULTS, **extra, "timeout_s": command_timeout})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "limits"
        fields = ", ".join(f for f in SandboxLimits.model_fields if f != "timeout_s")
        raise ValueError(f"sandbox_limits: {where}: {first['msg']} (fields: {fields})") from None
