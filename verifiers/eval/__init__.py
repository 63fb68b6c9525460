"""The run engine: scheduling, concurrency, results files, resume and run metrics."""

from verifiers.eval.engine import GroupPlan, RolloutEnv, RunProgress, run_generate, schedule
from verifiers.eval.metrics import RunAggregate, pass_at_k
from verifiers.eval.results import METADATA_FILE, RESULTS_FILE, RunDirectory
from verifiers.eval.run import EvalRun, ResumeMismatchError, run_eval
from verifiers.eval.sync import run_async, run_sync

__all__ = [
    "METADATA_FILE",
    "RESULTS_FILE",
    "EvalRun",
    "GroupPlan",
    "ResumeMismatchError",
    "RolloutEnv",
    "RunAggregate",
    "RunDirectory",
    "RunProgress",
    "pass_at_k",
    "run_async",
    "run_eval",
    "run_generate",
    "run_sync",
    "schedule",
]
