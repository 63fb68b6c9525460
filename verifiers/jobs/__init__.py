"""What ``vf-eval`` does beyond one run, as a library: a suite of evaluations (``verifiers.jobs.suite``:
resolve every entry, check ``--push`` before the first, run them with shared local models, collect what each
gave) and re-scoring a saved run with its environment (``verifiers.jobs.rescore``). Above ``envs`` and
``eval``: both load environments and run the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "rescore_saved_run": "verifiers.jobs.rescore",
    "SuiteItem": "verifiers.jobs.suite",
    "SuiteOutcome": "verifiers.jobs.suite",
    "SuitePushError": "verifiers.jobs.suite",
    "check_suite_push": "verifiers.jobs.suite",
    "plan_suite": "verifiers.jobs.suite",
    "resolve_run_config": "verifiers.jobs.suite",
    "run_suite": "verifiers.jobs.suite",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.jobs.rescore import rescore_saved_run as rescore_saved_run
    from verifiers.jobs.suite import (
        SuiteItem as SuiteItem,
        SuiteOutcome as SuiteOutcome,
        SuitePushError as SuitePushError,
        check_suite_push as check_suite_push,
        plan_suite as plan_suite,
        resolve_run_config as resolve_run_config,
        run_suite as run_suite,
    )
