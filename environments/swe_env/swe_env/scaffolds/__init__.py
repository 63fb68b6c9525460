"""The agent scaffolds of swe-env: ``r2e`` (R2E-Gym's function tools) and ``mini`` (mini-swe-agent's
bash-only loop), on a shared base (sandbox lifecycle, limits, metrics, grading)."""

from __future__ import annotations

SCAFFOLDS = ("r2e", "mini")

__all__ = ["SCAFFOLDS"]
