"""A benchmark report: the table a model card prints, from runs (a suite's closing table, ``vf-eval report``).

One row per evaluation: benchmark | avg@k with its 95% interval | pass@k | n | the model card's value |
tokens. Values are in percent (reward × 100), as model cards print accuracy. avg@k is the mean reward over
every scored rollout (k rollouts per problem); its interval is the one every other view shows
(``verifiers.hub.wire.reward_interval``: Wilson's for a mean in [0, 1]); pass@k is the unbiased estimate of
``metadata.json``. The same rows render as markdown (``to_markdown``), JSON (``to_json``) or, in the CLI, a
terminal table (``REPORT_COLUMNS`` and ``ReportRow.cells`` are what every form shows).

Also the **protocol** of a suite (``protocol_rows``): every setting that decides a number — problems,
rollouts per problem, sampling and environment arguments, the reference — with where its value comes from
(the entry's ``sources``, else the layer it was resolved from), for ``vf-eval @ SUITE --dry-run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from verifiers.eval.config import DEFAULT_SOURCE, PACKAGE_SOURCE, SUITE_SOURCE, EvalConfig, SuiteEntry
from verifiers.eval.results import RunDirectory
from verifiers.hub.packaging import normalize_name
from verifiers.hub.wire import reward_interval
from verifiers.types import DatasetRecord, RunMetadata

#: Column headers of the report, in order (markdown, terminal and the JSON's ``columns``).
REPORT_COLUMNS = ("benchmark", "avg@k", "95% CI", "pass@k", "n", "reference", "tokens")
#: Settings a suite's protocol shows (with ``sampling_args.*`` and ``env_args.*``), in this order.
PROTOCOL_SETTINGS = ("num_examples", "rollouts_per_example")


class ReportError(ValueError):
    """A run directory that cannot be reported (no metadata, unreadable)."""


class ReportRow(BaseModel):
    """One benchmark of a report. Percentages are reward × 100; ``None`` where there is nothing to show."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    env_id: str
    env_version: str | None = None
    model: str | None = None
    #: Rollouts per problem.
    k: int | None = None
    #: Problems evaluated, and rollouts scored over all of them.
    problems: int | None = None
    scored: int = 0
    avg_at_k: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pass_at_k: float | None = None
    reference: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    status: str = "failed"
    errors: dict[str, int] = {}
    path: str | None = None
    #: Why there is no result (the run failed before it finished).
    failure: str | None = None
    #: The data the run saw, in words (``describe_data``): which dataset, commit, subset or window, how many rows.
    data: str | None = None

    @property
    def delta(self) -> float | None:
        """avg@k minus the reference, in percentage points."""
        if self.avg_at_k is None or self.reference is None:
            return None
        return self.avg_at_k - self.reference

    def cells(self) -> tuple[str, ...]:
        """The row as ``REPORT_COLUMNS`` show it."""
        k = self.k if self.k is not None else "k"
        avg = f"avg@{k} {_pct(self.avg_at_k)}" if self.avg_at_k is not None else "–"
        ci = (
            f"[{_pct(self.ci_low)}, {_pct(self.ci_high)}]"
            if self.ci_low is not None and self.ci_high is not None
            else "–"
        )
        passed = f"pass@{k} {_pct(self.pass_at_k)}" if self.pass_at_k is not None else "–"
        n = f"{self.problems} × {self.k} ({self.scored} scored)" if self.problems is not None else "–"
        if self.reference is None:
            reference = "–"
        elif self.delta is None:
            reference = _pct(self.reference)
        else:
            reference = f"{_pct(self.reference)} ({self.delta:+.1f})"
        tokens = _tokens(self.prompt_tokens + self.completion_tokens) if self.status != "failed" else "–"
        return (self.benchmark, avg, ci, passed, n, reference, tokens)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _tokens(n: int) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def describe_data(record: DatasetRecord | None) -> str | None:
    """``metadata.json``'s ``dataset`` in one line, e.g. ``livecodebench/code_generation_lite@0fe84c3
    release_v6, start_date 2024-08-01, end_date 2025-05-01: 454 rows`` (a benchmark's number means nothing
    without the data, and LiveCodeBench's without its window)."""
    if record is None:
        return None
    where = record.dataset + (f"@{record.revision[:7]}" if record.revision else "")
    parts = [where, *record.configs]
    chosen = ", ".join(
        f"{k} {v}" for k, v in record.selection.items() if v is not None and k != "source_rows"
    )
    return " ".join(parts) + (f", {chosen}" if chosen else "") + f": {record.rows} rows"


def report_row(
    meta: RunMetadata,
    *,
    benchmark: str | None = None,
    reference: float | None = None,
    path: Path | None = None,
) -> ReportRow:
    """The report row of a run's metadata (``benchmark`` defaults to the environment id)."""
    k = meta.rollouts_per_example
    scored = meta.counts.scored
    interval = reward_interval(meta.avg_reward, scored, meta.std_reward)
    pass_k = meta.pass_at_k.get(str(k))
    return ReportRow(
        benchmark=benchmark or meta.env_id,
        env_id=meta.env_id,
        env_version=meta.env_version,
        model=meta.model,
        k=k,
        problems=meta.num_examples,
        scored=scored,
        avg_at_k=None if meta.avg_reward is None else 100 * meta.avg_reward,
        ci_low=None if interval is None else 100 * interval.low,
        ci_high=None if interval is None else 100 * interval.high,
        pass_at_k=None if pass_k is None else 100 * pass_k,
        reference=reference,
        prompt_tokens=meta.usage.prompt_tokens,
        completion_tokens=meta.usage.completion_tokens,
        status=meta.status,
        errors=dict(meta.counts.errored),
        path=str(path) if path is not None else None,
        data=describe_data(meta.dataset),
    )


def failed_row(entry: SuiteEntry, failure: str, *, model: str | None = None) -> ReportRow:
    """The row of a suite entry that produced no run."""
    return ReportRow(
        benchmark=entry.name, env_id=entry.env_id, model=model, reference=entry.reference, failure=failure
    )


def read_report_metadata(run_dir: Path) -> RunMetadata:
    """A run directory's metadata, or ``ReportError`` saying what is wrong with the path."""
    try:
        meta = RunDirectory(Path(run_dir)).read_metadata()
    except (OSError, ValueError) as exc:
        raise ReportError(f"{run_dir}: cannot read metadata.json ({exc})") from None
    if meta is None:
        raise ReportError(f"{run_dir} is not a run directory (no metadata.json)")
    return meta


def matching_entry(meta: RunMetadata, entries: Sequence[SuiteEntry]) -> SuiteEntry | None:
    """The suite entry a saved run belongs to: one of the run's environment whose settings the run does not
    contradict (its ``env_args`` and ``sampling_args`` among the run's, the same rollouts per problem and
    model when the entry gives them); of several, the one that agrees on the most, then the first."""
    env_id = normalize_name(meta.env_id)
    best: tuple[int, SuiteEntry] | None = None
    for entry in entries:
        if normalize_name(entry.env_id) != env_id:
            continue
        agreed = _agreement(entry.settings, meta)
        if agreed is not None and (best is None or agreed > best[0]):
            best = (agreed, entry)
    return best[1] if best else None


def _agreement(settings: Mapping[str, Any], meta: RunMetadata) -> int | None:
    """How many of an entry's identifying settings the run shares; None if it contradicts one."""
    agreed = 0
    for table, recorded in (("env_args", meta.env_args), ("sampling_args", meta.sampling_args)):
        for key, value in (settings.get(table) or {}).items():
            if recorded.get(key) != value:
                return None
            agreed += 1
    for name in ("rollouts_per_example", "model"):
        if name in settings:
            if getattr(meta, name) != settings[name]:
                return None
            agreed += 1
    return agreed


def rows_from_runs(run_dirs: Sequence[Path], entries: Sequence[SuiteEntry] = ()) -> list[ReportRow]:
    """The report of saved runs: each named and referenced by its suite entry when ``entries`` (a suite
    file's) has one for it, in the suite's order (runs no entry claims follow, in the order given).
    Raises ``ReportError`` for a path that is not a run."""
    ranked: list[tuple[int, ReportRow]] = []
    for run_dir in run_dirs:
        meta = read_report_metadata(run_dir)
        entry = matching_entry(meta, entries)
        row = report_row(
            meta,
            benchmark=entry.name if entry else None,
            reference=entry.reference if entry else None,
            path=Path(run_dir),
        )
        ranked.append((list(entries).index(entry) if entry else len(entries), row))
    return [row for _, row in sorted(ranked, key=lambda pair: pair[0])]


def to_markdown(rows: Sequence[ReportRow], *, model: str | None = None) -> str:
    """A GitHub-flavoured markdown table of ``rows`` (values in percent), for pasting into a model card."""
    models = sorted({r.model for r in rows if r.model})
    shown = model or ", ".join(models)
    lines = [f"Model: {shown}", ""] if shown else []
    lines.append("| " + " | ".join(REPORT_COLUMNS) + " |")
    lines.append("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(REPORT_COLUMNS))) + "|")
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
    lines += [
        "",
        "Values in percent. avg@k: mean reward over every scored rollout (k per problem); 95% CI: Wilson "
        "score interval over the scored rollouts; pass@k: unbiased estimate; reference: the model card's "
        "value (avg@k minus it in brackets); tokens: prompt + completion.",
    ]
    described = [r for r in rows if r.data]
    if described:
        lines += ["", "Data:", ""] + [f"- {r.benchmark}: {r.data}" for r in described]
    return "\n".join(lines) + "\n"


def to_json(rows: Sequence[ReportRow]) -> dict[str, Any]:
    """The report as JSON: the rows' fields (percentages), and the cells as the table shows them."""
    return {
        "unit": "percent",
        "columns": list(REPORT_COLUMNS),
        "rows": [{**r.model_dump(mode="json"), "delta": r.delta, "cells": list(r.cells())} for r in rows],
    }


# --- a suite's protocol ------------------------------------------------------------------------------
class ProtocolRow(BaseModel):
    """One setting of one suite entry: its value and where the value comes from."""

    model_config = ConfigDict(frozen=True)

    benchmark: str
    setting: str
    value: Any
    source: str


def protocol_rows(entries: Sequence[SuiteEntry], configs: Sequence[EvalConfig]) -> list[ProtocolRow]:
    """The protocol of a suite, resolved: for each entry the settings that decide its numbers, each with
    its source — the entry's ``sources`` text when the suite file's value is the one in force, else the
    layer that set it (a flag, a package default, …)."""
    rows: list[ProtocolRow] = []
    for entry, config in zip(entries, configs, strict=True):
        values: dict[str, Any] = {name: getattr(config, name) for name in PROTOCOL_SETTINGS}
        values.update({f"sampling_args.{k}": v for k, v in config.sampling_args.items()})
        values.update({f"env_args.{k}": v for k, v in config.env_args.items()})
        for setting, value in values.items():
            rows.append(
                ProtocolRow(
                    benchmark=entry.name,
                    setting=setting,
                    value=value,
                    source=_source_of(entry, config, setting),
                )
            )
        if entry.reference is not None:
            rows.append(
                ProtocolRow(
                    benchmark=entry.name,
                    setting="reference",
                    value=entry.reference,
                    source=entry.sources.get("reference", _LAYER_NAMES[SUITE_SOURCE]),
                )
            )
    return rows


def package_drift(entry: SuiteEntry, package_defaults: Mapping[str, Any]) -> list[str]:
    """Where a suite entry's protocol differs from its environment package's ``[tool.verifiers.eval]``
    defaults, so that ``vf-eval ENV`` alone would not follow it (one message per setting)."""
    own: dict[str, Any] = {k: entry.settings[k] for k in PROTOCOL_SETTINGS if k in entry.settings}
    own.update({f"sampling_args.{k}": v for k, v in (entry.settings.get("sampling_args") or {}).items()})
    package: dict[str, Any] = {k: package_defaults[k] for k in PROTOCOL_SETTINGS if k in package_defaults}
    sampling = package_defaults.get("sampling_args")
    if isinstance(sampling, Mapping):
        package.update({f"sampling_args.{k}": v for k, v in sampling.items()})
    return [
        f"{entry.name}: the suite sets {name} = {value!r}, {entry.env_id}'s [tool.verifiers.eval] "
        + (f"{package[name]!r}" if name in package else "does not set it")
        + f" (vf-eval {entry.env_id} alone differs)"
        for name, value in own.items()
        if package.get(name, _UNSET) != value
    ]


_UNSET = object()


#: How the protocol names a resolution layer that has no written source.
_LAYER_NAMES = {
    SUITE_SOURCE: "the suite file (no source given)",
    PACKAGE_SOURCE: "package default ([tool.verifiers.eval] of {env})",
    DEFAULT_SOURCE: "built-in default",
    "flag": "flag",
}


def _source_of(entry: SuiteEntry, config: EvalConfig, setting: str) -> str:
    layer = config.sources.get(setting) or _table_source(config.sources, setting) or DEFAULT_SOURCE
    explained = entry.sources.get(setting)
    if explained and layer == SUITE_SOURCE:
        return explained
    return _LAYER_NAMES.get(layer, layer).format(env=entry.env_id)


def _table_source(sources: Mapping[str, str], setting: str) -> str | None:
    # env_args are resolved as one setting; their keys come from wherever the table came from.
    table = setting.split(".", 1)[0]
    return sources.get(table) if "." in setting else None


__all__ = [
    "PROTOCOL_SETTINGS",
    "REPORT_COLUMNS",
    "ProtocolRow",
    "ReportError",
    "ReportRow",
    "failed_row",
    "matching_entry",
    "package_drift",
    "protocol_rows",
    "read_report_metadata",
    "report_row",
    "rows_from_runs",
    "to_json",
    "to_markdown",
]
