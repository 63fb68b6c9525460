"""vf-eval's terminal output: the live progress display and the end-of-run summary (rich).

The live display reads ``RunProgress`` from a task on the event loop about four times a second; on a
non-terminal it degrades to one plain log line every few seconds (and one at the end).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from verifiers._urls import redact_url
from verifiers.eval.config import SuiteEntry
from verifiers.eval.engine import RunProgress
from verifiers.eval.report import REPORT_COLUMNS, ReportRow, failed_row, report_row
from verifiers.hub.wire import describe_reward
from verifiers.types import RunMetadata

REFRESH_S = 0.25
PLAIN_EVERY_S = 5.0
#: Requests unanswered for longer than this are shown as waiting (a silent or overloaded server).
SLOW_REQUEST_S = 30.0


def fmt_reward(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _errors_text(errors: Mapping[str, int]) -> str:
    return ", ".join(f"{cat} {n}" for cat, n in sorted(errors.items())) or "none"


def _cap(p: RunProgress) -> str:
    """The adaptive concurrency cap, when the run has one (it moves with the endpoint's push-back)."""
    text = p.cap_text
    return f" / {text}" if text else ""


class ProgressDisplay:
    """Renders a ``RunProgress`` live until ``stop()``; use as ``async with``."""

    def __init__(
        self, console: Console, progress: RunProgress, title: str, *, live: bool | None = None
    ) -> None:
        self.console = console
        self.progress = progress
        self.title = title
        self.live = console.is_terminal if live is None else live
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    # --- rendering ---------------------------------------------------------------------------------
    def plain_line(self) -> str:
        p = self.progress
        pct = f" ({100 * p.generated / p.total:.0f}%)" if p.total else ""
        return (
            f"{self.title}: {p.generated}/{p.total} rollouts{pct}, {p.done} scored, {p.rate:.2f}/s, "
            f"mean reward {fmt_reward(p.mean_reward)}, in flight {p.in_flight}{_cap(p)}, "
            f"retrying {p.retries_in_flight}, errors: {_errors_text(p.errors)}{self._waiting_text()}"
        )

    def _waiting_text(self) -> str:
        n = self.progress.waiting_longer_than(SLOW_REQUEST_S)
        if not n:
            return ""
        stats = self.progress.client.stats if self.progress.client is not None else None
        if stats is not None and stats.capacity is not None:
            # The local model answers in turn (capacity at once): a queue there is busy, not silent.
            sent = stats.answered + len(stats.waiting)
            return (
                f", local model busy: {stats.answered} of {sent} requests answered "
                f"({stats.capacity} at a time)"
            )
        return f", {n} requests waiting > {SLOW_REQUEST_S:g} s (server silent?)"

    def renderable(self) -> RenderableType:
        p = self.progress
        retrying = p.retries_in_flight
        # Counted per finished rollout, not per finished group: long groups must still show movement.
        bar = ProgressBar(total=max(1, p.total), completed=p.generated, width=40)
        head = Table.grid(padding=(0, 1))
        head.add_row(
            bar,
            Text(f"{p.generated}/{p.total} rollouts", style="bold"),
            Text(f"{p.done} scored", style="dim"),
            Text(f"{p.rate:.2f}/s"),
        )
        info = Table.grid(padding=(0, 2))
        info.add_row(
            Text.assemble(("mean reward ", "dim"), (fmt_reward(p.mean_reward), "bold cyan")),
            Text.assemble(("in flight ", "dim"), str(p.in_flight), (_cap(p), "dim")),
            Text.assemble(("retries in flight ", "dim"), (str(retrying), "yellow" if retrying else "")),
            Text.assemble(("errors ", "dim"), (_errors_text(p.errors), "red" if p.errors else "")),
        )
        parts: list[RenderableType] = [head, info]
        waiting = self._waiting_text()
        if waiting:
            parts.append(Text(waiting.lstrip(", "), style="yellow"))
        return Panel(Group(*parts), title=escape(self.title), title_align="left", expand=False)

    # --- lifecycle ---------------------------------------------------------------------------------
    async def _run_live(self) -> None:
        with Live(self.renderable(), console=self.console, auto_refresh=False, transient=False) as live:
            while not self._stop.is_set():
                live.update(self.renderable(), refresh=True)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), REFRESH_S)
            live.update(self.renderable(), refresh=True)

    async def _run_plain(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), REFRESH_S)
            if time.monotonic() - last >= PLAIN_EVERY_S:
                self.console.print(self.plain_line(), markup=False, highlight=False, soft_wrap=True)
                last = time.monotonic()
        self.console.print(self.plain_line(), markup=False, highlight=False, soft_wrap=True)

    async def __aenter__(self) -> ProgressDisplay:
        self._task = asyncio.create_task(self._run_live() if self.live else self._run_plain())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


# --- the summary -----------------------------------------------------------------------------------
def _last_text(messages: Any, role: str) -> str:
    if isinstance(messages, str):
        return messages
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") == role:
            content = m.get("content")
            return content if isinstance(content, str) else str(content or "")
    return ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_examples(results: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, str]]:
    """Category → (count, one example ``Type: message``)."""
    out: dict[str, tuple[int, str]] = {}
    for r in results:
        err = r.get("error")
        if err:
            cat = str(err.get("category", "env"))
            n, example = out.get(cat, (0, f"{err.get('type')}: {err.get('message')}"))
            out[cat] = (n + 1, example)
    return out


def summary_table(
    meta: RunMetadata, results: Sequence[Mapping[str, Any]], path: str | None, *, title: str = "Summary"
) -> Table:
    t = Table(title=title, show_header=False, title_justify="left", box=None, padding=(0, 2))
    t.add_column(style="dim", no_wrap=True)
    t.add_column(overflow="fold")  # paths must stay whole (copy-pasteable), even on a narrow console
    t.add_row(
        "environment", f"{meta.env_id} {meta.env_version}  (content {meta.env_content_hash[:12] or '?'})"
    )
    t.add_row(
        "model",
        f"{meta.model}  @ {redact_url(meta.base_url if isinstance(meta.base_url, str) else ', '.join(meta.base_url))}",
    )
    t.add_row(
        "plan",
        f"{meta.num_examples} examples × {meta.rollouts_per_example} rollouts = {meta.counts.planned}"
        + (f", sampling {meta.sampling_args}" if meta.sampling_args else ""),
    )
    c = meta.counts
    t.add_row(
        "reward",
        f"[bold cyan]{describe_reward(meta.avg_reward, c.scored, meta.std_reward)}[/]"
        f"  ({c.scored} scored of {c.completed} done)",
    )
    if meta.pass_at_k:
        t.add_row("pass@k", "  ".join(f"pass@{k} {v:.3f}" for k, v in meta.pass_at_k.items()))
    if meta.avg_metrics:
        t.add_row("metrics", "  ".join(f"{escape(k)} {v:.3f}" for k, v in meta.avg_metrics.items()))
    errors = error_examples(results)
    if errors:
        lines = [f"[red]{cat} {n}[/]: {escape(_clip(ex, 160))}" for cat, (n, ex) in sorted(errors.items())]
        t.add_row("errors", "\n".join(lines))
    else:
        t.add_row("errors", "none")
    t.add_row("tokens", f"prompt {meta.usage.prompt_tokens:,}  completion {meta.usage.completion_tokens:,}")
    rate = f" ({c.completed / meta.duration_s:.2f} rollouts/s)" if meta.duration_s > 0 else ""
    t.add_row("duration", f"{meta.duration_s:.1f}s{rate}, status {meta.status}")
    t.add_row("results", escape(path) if path else "not saved (--no-save)")
    return t


def samples_table(results: Sequence[Mapping[str, Any]], n: int = 3, width: int = 100) -> Table:
    # One rollout per example first, so the few rows shown cover different prompts.
    ordered = sorted(results, key=lambda r: (r.get("rollout_index", 0), r.get("example_id", 0)))[:n]
    # Environments graded by hidden tests (code-env) have no answer text: no empty column for them.
    show_answer = any(str(r.get("answer") or "") for r in ordered)
    t = Table(title=f"Sample rollouts ({len(ordered)} of {len(results)})", title_justify="left")
    t.add_column("example", justify="right", no_wrap=True)
    t.add_column("prompt")
    t.add_column("completion")
    if show_answer:
        t.add_column("answer")
    t.add_column("reward", justify="right", no_wrap=True)
    for r in ordered:
        err = r.get("error")
        completion = _last_text(r.get("completion"), "assistant")
        if err:
            completion = f"[error {err.get('category')}] {err.get('type')}: {err.get('message')}"
        cells = [
            f"{r.get('example_id')}/{r.get('rollout_index')}",
            escape(_clip(_last_text(r.get("prompt"), "user"), width // 2)),
            escape(_clip(completion, width)),
        ]
        if show_answer:
            cells.append(escape(_clip(str(r.get("answer", "")), 30)))
        t.add_row(*cells, fmt_reward(r.get("reward")))
    return t


def rescore_table(old: RunMetadata, new: RunMetadata, *, rescored: int, kept: int, changed: int) -> Table:
    t = Table(title="Re-scored", title_justify="left")
    t.add_column("")
    t.add_column("original", justify="right")
    t.add_column("re-scored", justify="right")
    t.add_row("mean reward", fmt_reward(old.avg_reward), fmt_reward(new.avg_reward))
    t.add_row("scored rollouts", str(old.counts.scored), str(new.counts.scored))
    t.add_row("errors", _errors_text(old.counts.errored), _errors_text(new.counts.errored))
    for k in sorted(set(old.pass_at_k) | set(new.pass_at_k), key=int):
        t.add_row(f"pass@{k}", fmt_reward(old.pass_at_k.get(k)), fmt_reward(new.pass_at_k.get(k)))
    for m in sorted(set(old.avg_metrics) | set(new.avg_metrics)):
        t.add_row(escape(m), fmt_reward(old.avg_metrics.get(m)), fmt_reward(new.avg_metrics.get(m)))
    t.caption = (
        f"{rescored} rollouts re-scored, {kept} kept (generation had failed), {changed} rewards changed"
    )
    return t


# --- suites --------------------------------------------------------------------------------------------
@dataclass
class SuiteRow:
    """One entry of a suite as its closing table shows it."""

    entry: SuiteEntry
    model: str
    metadata: RunMetadata | None = None
    path: Path | None = None
    failure: str | None = None
    pushed: bool = False

    @property
    def origin(self) -> str:
        return self.entry.origin

    def report(self) -> ReportRow:
        if self.metadata is None:
            return failed_row(self.entry, self.failure or "did not run", model=self.model)
        return report_row(
            self.metadata, benchmark=self.entry.name, reference=self.entry.reference, path=self.path
        )


def report_table(rows: Sequence[ReportRow], *, title: str, pushed: Sequence[bool] | None = None) -> Table:
    """A benchmark report (``verifiers.eval.report``) as a terminal table: the columns of its markdown
    form, then model, environment, the data it saw (dataset, commit, window), errors, status, whether it was pushed (a suite's ``--push``) and the run directory."""
    t = Table(title=title, title_justify="left")
    t.add_column("#", justify="right", no_wrap=True)
    for i, name in enumerate(REPORT_COLUMNS):
        t.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
    t.add_column("model", no_wrap=True)
    t.add_column("environment", no_wrap=True)
    t.add_column("data", overflow="fold")
    t.add_column("errors")
    t.add_column("status", no_wrap=True)
    if pushed is not None:
        t.add_column("pushed", no_wrap=True)
    t.add_column("results", overflow="fold")
    for i, row in enumerate(rows, start=1):
        status = "[red]failed[/]" if row.failure is not None else escape(row.status)
        extra = [] if pushed is None else ["yes" if pushed[i - 1] else "[red]no[/]"]
        where = escape(row.path) if row.path is not None else escape(_clip(row.failure or "", 160))
        t.add_row(
            str(i),
            *(escape(c) for c in row.cells()),
            escape(row.model or "–"),
            escape(f"{row.env_id} {row.env_version}" if row.env_version else row.env_id),
            escape(row.data or "–"),
            _errors_text(row.errors),
            status,
            *extra,
            where,
        )
    return t


def suite_table(rows: Sequence[SuiteRow], *, pushed: bool = False) -> Table:
    """The closing table of ``vf-eval @ suite.toml``: the suite's benchmark report, one line per entry (an
    entry that ran and then failed, e.g. every rollout errored, keeps its numbers and says it failed)."""
    reports = [
        row.report().model_copy(update={"failure": row.failure}) if row.failure is not None else row.report()
        for row in rows
    ]
    return report_table(
        reports, title=f"Suite: {len(rows)} evaluations", pushed=[r.pushed for r in rows] if pushed else None
    )
