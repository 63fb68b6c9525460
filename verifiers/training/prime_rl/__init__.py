"""The prime-rl adapter behind ``vf-train``: render, validate and launch runs of the pinned release
(v0.5.0), the bridge packages its orchestrator loads, and the custom IcePop loss package it trains with.

The three steps are functions of their modules (named like them, so not re-exported here):
``verifiers.training.prime_rl.render.render``, ``….validate.validate``, ``….launch.launch``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "RELEASE": "verifiers.training.prime_rl.release",
    "RELEASE_COMMIT": "verifiers.training.prime_rl.release",
    "REFERENCE_VERIFIERS": "verifiers.training.prime_rl.release",
    "check_keys": "verifiers.training.prime_rl.release",
    "RunSpec": "verifiers.training.prime_rl.spec",
    "EnvEntry": "verifiers.training.prime_rl.spec",
    "RenderError": "verifiers.training.prime_rl.render",
    "Report": "verifiers.training.prime_rl.validate",
    "write_packages": "verifiers.training.prime_rl.bridge",
    "bridge_files": "verifiers.training.prime_rl.bridge",
    "plan": "verifiers.training.prime_rl.launch",
    "LaunchError": "verifiers.training.prime_rl.launch",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.training.prime_rl.bridge import (
        bridge_files as bridge_files,
        write_packages as write_packages,
    )
    from verifiers.training.prime_rl.launch import LaunchError as LaunchError, plan as plan
    from verifiers.training.prime_rl.release import (
        REFERENCE_VERIFIERS as REFERENCE_VERIFIERS,
        RELEASE as RELEASE,
        RELEASE_COMMIT as RELEASE_COMMIT,
        check_keys as check_keys,
    )
    from verifiers.training.prime_rl.render import RenderError as RenderError
    from verifiers.training.prime_rl.spec import EnvEntry as EnvEntry, RunSpec as RunSpec
    from verifiers.training.prime_rl.validate import Report as Report
