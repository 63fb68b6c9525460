"""A suite of evaluations: one file of ``[[eval]]`` entries (``verifiers.eval.config.load_suite``), each
resolved like a single ``vf-eval`` run, checked against the hub before the first runs when its results are
to be pushed, and run in turn with one local model server per model for the whole suite.

An entry that fails is recorded with its reason and the suite goes on; what each entry gave
(``SuiteOutcome``) is what the closing table and ``vf-eval report`` show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifiers.envs.loading import environment_identity, eval_defaults
from verifiers.errors import VerifiersError
from verifiers.eval.config import (
    SUITE_SOURCE,
    ConfigError,
    EvalConfig,
    SuiteEntry,
    load_suite,
    resolve_eval_config,
)
from verifiers.eval.launch import LocalModels, target_of
from verifiers.eval.runs import ResumeMismatchError
from verifiers.hub.client import HubClient, HubClientError
from verifiers.hub.packaging import normalize_name
from verifiers.hub.results import PushTarget, push_target

if TYPE_CHECKING:
    from verifiers.eval.run import EvalRun
    from verifiers.types import RunMetadata

__all__ = [
    "SuiteItem",
    "SuiteOutcome",
    "SuitePushError",
    "check_suite_push",
    "plan_suite",
    "resolve_run_config",
    "run_suite",
]


class SuitePushError(VerifiersError):
    """Some entries of a suite cannot be pushed (no saved run directory, an environment the hub refuses):
    raised before any entry runs, naming each."""

    def __init__(self, problems: Sequence[str], total: int) -> None:
        self.problems = list(problems)
        super().__init__(
            f"--push: {len(problems)} of {total} evaluations cannot be pushed, so none was run: "
            + "; ".join(problems)
        )


@dataclass(frozen=True)
class SuiteItem:
    """An entry of a suite (1-based ``index`` in the file) and the run configuration it resolved to."""

    index: int
    entry: SuiteEntry
    config: EvalConfig


@dataclass
class SuiteOutcome:
    """What one entry gave: its run's metadata and directory, or the reason it failed; whether it was pushed."""

    item: SuiteItem
    metadata: RunMetadata | None = None
    path: Path | None = None
    failure: str | None = None
    pushed: bool = False


def resolve_run_config(env_id: str, layers: Sequence[tuple[str, Mapping[str, Any]]]) -> EvalConfig:
    """One run's configuration, as ``vf-eval ENV`` resolves it: ``layers`` (source name → settings, lowest
    first) over the installed package's ``[tool.verifiers.eval]`` defaults, with the run-directory policy;
    the model target is checked too, so a bad one fails before anything loads. Raises ``ConfigError``,
    ``ResumeMismatchError`` or the ``VerifiersError`` of a package that cannot be read."""
    env_id = normalize_name(env_id)  # the id runs are recorded (and found by --resume) under
    config = resolve_eval_config(env_id, *layers, package_defaults=eval_defaults(env_id))
    target_of(config)
    return config


def plan_suite(
    path: str | Path,
    flags: Mapping[str, Any] | None = None,
    *,
    resolve: Callable[[str, Sequence[tuple[str, Mapping[str, Any]]]], EvalConfig] = resolve_run_config,
) -> list[SuiteItem]:
    """Every entry of the suite file at ``path`` resolved (``resolve``: ``resolve_run_config``), ``flags``
    (settings given for the whole suite) over each entry's own. A bad file, or an entry that cannot be
    resolved, raises ``ConfigError`` naming the entry."""
    items = []
    for i, entry in enumerate(load_suite(path), start=1):
        try:
            config = resolve(entry.env_id, [(SUITE_SOURCE, entry.settings), ("flag", dict(flags or {}))])
        except (ConfigError, ResumeMismatchError, VerifiersError) as exc:
            raise ConfigError(f"{entry.origin}: {exc}") from exc
        items.append(SuiteItem(i, entry, config))
    return items


def check_suite_push(items: Sequence[SuiteItem], client: HubClient) -> dict[int, PushTarget]:
    """Where each entry's results will go on the hub, checked before the first entry runs (the token, the
    hub, each environment and its content hash). Raises ``SuitePushError`` naming every entry that cannot
    be pushed, so a suite never runs for hours to find its results refused."""
    targets: dict[int, PushTarget] = {}
    problems: list[str] = []
    for item in items:
        origin = item.entry.origin
        if not item.config.save_results or item.config.output_dir is None:
            problems.append(f"{origin}: --push needs the saved run directory (save_results is off)")
            continue
        try:
            ident = environment_identity(item.config.env_id)
            targets[item.index] = push_target(client, ident.env_id, ident.version, ident.content_hash)
        except (VerifiersError, HubClientError) as exc:
            problems.append(f"{origin}: {exc}")
    if problems:
        raise SuitePushError(problems, len(items))
    return targets


def run_suite(
    items: Sequence[SuiteItem],
    run_one: Callable[[SuiteItem, LocalModels], EvalRun],
    *,
    push: Callable[[SuiteOutcome], None] | None = None,
) -> list[SuiteOutcome]:
    """Run every entry in turn with ``run_one`` (which loads the environment and runs ``item.config``,
    sharing ``LocalModels``: one server per local model for the whole suite). An ``Exception`` from
    ``run_one`` or ``push`` is that entry's failure (recorded, and the suite goes on); anything else
    (``KeyboardInterrupt``, cancellation) stops the suite. ``push`` uploads a run that succeeded."""
    outcomes: list[SuiteOutcome] = []
    with LocalModels.for_configs([item.config for item in items]) as local_models:
        for item in items:
            outcome = SuiteOutcome(item)
            outcomes.append(outcome)
            try:
                run = run_one(item, local_models)
                outcome.metadata, outcome.path = run.metadata, run.path
                if push is not None and run.path is not None:
                    push(outcome)
                    outcome.pushed = True
            except Exception as exc:  # one entry's failure is recorded; the others still run
                outcome.failure = str(exc)
    return outcomes
