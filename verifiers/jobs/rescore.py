"""Re-scoring a saved run with its environment: the run's own environment (a different one is refused)
loaded with the run's ``env_args`` unless others are given, then ``verifiers.eval.rescore.rescore``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from verifiers.envs.environment import Environment
from verifiers.envs.loading import load_environment
from verifiers.eval.rescore import RescoreError, RescoreResult, load_metadata, rescore
from verifiers.hub.packaging import normalize_name

__all__ = ["rescore_saved_run"]


def _load(env_id: str, env_args: Mapping[str, Any]) -> Environment:
    return load_environment(env_id, **env_args)


def rescore_saved_run(
    run_dir: str | Path,
    *,
    env_id: str | None = None,
    env_args: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
    save: bool = True,
    load: Callable[[str, Mapping[str, Any]], Environment] = _load,
) -> RescoreResult:
    """Score the rollouts saved in ``run_dir`` again with the environment that made them. ``env_id``, when
    given, must be the run's (a guard against re-scoring with the wrong rubric); ``env_args`` replace the
    run's own; ``load`` loads the environment (``verifiers.load_environment`` by default). Raises
    ``RescoreError`` for a directory that is not a finished run, or another environment's."""
    run_dir = Path(run_dir)
    meta = load_metadata(run_dir)
    if env_id is not None and normalize_name(env_id) != normalize_name(meta.env_id):
        raise RescoreError(f"{run_dir} is a run of {meta.env_id}, not {env_id}")
    env = load(meta.env_id, env_args if env_args is not None else meta.env_args)
    return rescore(env, run_dir, output_dir=output_dir, save=save)
