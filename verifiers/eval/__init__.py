"""The run engine: scheduling, concurrency, results files, resume and run metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "ConfigError": "verifiers.eval.config",
    "EvalConfig": "verifiers.eval.config",
    "EvalSettings": "verifiers.eval.config",
    "RunSettings": "verifiers.eval.config",
    "load_suite": "verifiers.eval.config",
    "resolve_eval_config": "verifiers.eval.config",
    "GroupPlan": "verifiers.eval.engine",
    "RolloutEnv": "verifiers.eval.engine",
    "RunProgress": "verifiers.eval.engine",
    "run_generate": "verifiers.eval.engine",
    "schedule": "verifiers.eval.engine",
    "run_config": "verifiers.eval.launch",
    "RunAggregate": "verifiers.eval.metrics",
    "pass_at_k": "verifiers.eval.metrics",
    "METADATA_FILE": "verifiers.eval.results",
    "RESULTS_FILE": "verifiers.eval.results",
    "RunDirectory": "verifiers.eval.results",
    "RunDirectoryBusyError": "verifiers.eval.results",
    "UnwritableRecordError": "verifiers.eval.results",
    "to_json_value": "verifiers.eval.results",
    "EvalRun": "verifiers.eval.run",
    "run_eval": "verifiers.eval.run",
    "ResumeMismatchError": "verifiers.eval.runs",
    "run_async": "verifiers.eval.sync",
    "run_sync": "verifiers.eval.sync",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.eval.config import (
        ConfigError as ConfigError,
        EvalConfig as EvalConfig,
        EvalSettings as EvalSettings,
        RunSettings as RunSettings,
        load_suite as load_suite,
        resolve_eval_config as resolve_eval_config,
    )
    from verifiers.eval.engine import (
        GroupPlan as GroupPlan,
        RolloutEnv as RolloutEnv,
        RunProgress as RunProgress,
        run_generate as run_generate,
        schedule as schedule,
    )
    from verifiers.eval.launch import run_config as run_config
    from verifiers.eval.metrics import RunAggregate as RunAggregate, pass_at_k as pass_at_k
    from verifiers.eval.results import (
        METADATA_FILE as METADATA_FILE,
        RESULTS_FILE as RESULTS_FILE,
        RunDirectory as RunDirectory,
        RunDirectoryBusyError as RunDirectoryBusyError,
        UnwritableRecordError as UnwritableRecordError,
        to_json_value as to_json_value,
    )
    from verifiers.eval.run import EvalRun as EvalRun, run_eval as run_eval
    from verifiers.eval.runs import ResumeMismatchError as ResumeMismatchError
    from verifiers.eval.sync import run_async as run_async, run_sync as run_sync
