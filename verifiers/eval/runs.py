"""Run directories: where a new run goes (``./outputs/evals/<env>--<model>/<timestamp-id>/``), and which
earlier run a resumed run continues. The same policy for ``vf-eval`` and ``Environment.evaluate``."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from verifiers.eval.results import RunDirectory
from verifiers.hub.packaging import normalize_name
from verifiers.types import RunMetadata

DEFAULT_OUTPUT_ROOT = Path("outputs/evals")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


def model_slug(model: str) -> str:
    """A model name as one path component: ``/`` becomes ``--`` and other unsafe characters ``_``."""
    return _UNSAFE.sub("_", model.replace("/", "--")).strip("_") or "model"


def run_root(env_id: str, model: str, base: Path = DEFAULT_OUTPUT_ROOT) -> Path:
    """``./outputs/evals/<env_id>--<model>/``: every run of one environment with one model."""
    return base / f"{env_id}--{model_slug(model)}"


def new_run_dir(env_id: str, model: str, base: Path = DEFAULT_OUTPUT_ROOT) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return run_root(env_id, model, base) / f"{stamp}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class SavedRun:
    path: Path
    metadata: RunMetadata

    @property
    def incomplete(self) -> bool:
        m = self.metadata
        return m.status != "completed" or m.counts.completed < m.counts.planned


def read_run(path: Path) -> SavedRun | None:
    try:
        meta = RunDirectory(path).read_metadata()
    except (OSError, ValueError):
        return None
    return SavedRun(path, meta) if meta is not None else None


def find_resumable(
    env_id: str, model: str, wanted: dict[str, Any], base: Path = DEFAULT_OUTPUT_ROOT
) -> SavedRun | None:
    """The newest incomplete run of ``env_id`` (normalized, as runs record it) with ``model`` under ``base``
    whose metadata agrees with every setting in ``wanted`` (only the settings given on the command line)."""
    root = run_root(env_id, model, base)
    if not root.is_dir():
        return None
    runs = [r for p in root.iterdir() if p.is_dir() and (r := read_run(p)) is not None]
    candidates = [
        r
        for r in runs
        if r.incomplete
        and normalize_name(r.metadata.env_id) == env_id
        and r.metadata.model == model
        and all(getattr(r.metadata, k) == v for k, v in wanted.items())
    ]
    candidates.sort(key=lambda r: (r.metadata.started_at, r.path.stat().st_mtime), reverse=True)
    return candidates[0] if candidates else None


class ResumeError(ValueError):
    """A run to resume was named but cannot be read."""


class ResumeMismatchError(ValueError):
    """The run directory to resume belongs to a different environment, model or run plan."""


def saved_run_for(
    env_id: str,
    model: str,
    *,
    resume: bool | Path | None,
    output_dir: Path | None,
    wanted: dict[str, Any],
    base: Path = DEFAULT_OUTPUT_ROOT,
) -> SavedRun | None:
    """The run a resumed evaluation continues, or ``None`` for a new run.

    ``resume`` a path: that run directory (it must hold a readable ``metadata.json``, or be a directory
    a run created but was killed in before writing one: then ``None``, and the new run goes there). ``resume=True``
    with ``output_dir``: the run there, if any. ``resume=True`` alone: the newest incomplete run of this
    environment and model under ``base`` that agrees with ``wanted`` (the settings given explicitly)."""
    if resume is None or resume is False:
        return None
    if isinstance(resume, Path):
        saved = read_run(resume)
        if saved is None and RunDirectory(resume).is_unstarted():
            return None  # killed before its first metadata: the run starts there afresh
        if saved is None and not resume.exists():
            raise ResumeError(
                f"nothing to resume at {resume}: no such directory (a run stopped before its first rollout "
                "leaves none; start it again without --resume)"
            )
        if saved is None:
            raise ResumeError(f"nothing to resume at {resume} (no readable metadata.json)")
        return saved
    if output_dir is not None:
        return read_run(output_dir)
    return find_resumable(env_id, model, wanted, base)
