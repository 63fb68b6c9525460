"""Validation mode (no model): every task's empty patch scores 0 and its gold patch 1, under both graders.

```
python -m swe_env.validate [--source bundled|generated|r2e|swebench] [--rows FILE] [--num-tasks N]
                           [--seed S] [--backend runsc|bwrap] [--concurrency K] [--timeout S]
                           [--sandbox-limits JSON]
```

The sources are ``load_environment``'s: ``--source swebench --rows my_rows.jsonl`` checks a user's own
SWE-bench (or, with ``r2e``, R2E-Gym) rows from a JSON or JSON Lines file. Each check runs in a fresh
sandbox of a pool, under the limits rollouts use (``swe_env.limits``; ``--sandbox-limits`` overrides them
as ``load_environment(sandbox_limits=...)`` does): upload the repository, apply the patch, grade. Both
graders score the same test run. Prints one line per task and exits 1 if any task disagrees (or cannot be
checked: a missing gold patch, an infra error), 2 on bad arguments or rows, 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swe_env.grading import grade, score_statuses
from swe_env.limits import sandbox_limits
from swe_env.repo import PatchError, apply_patch, prepare_repo
from swe_env.sources import SOURCES, load_tasks
from swe_env.task import SweTask

if TYPE_CHECKING:
    from verifiers.sandbox import SandboxLimits


@dataclass(frozen=True)
class Check:
    """One patch of one task, graded."""

    r2e: float | None
    swebench: float | None
    error: str | None = None


@dataclass(frozen=True)
class TaskReport:
    task_id: str
    empty: Check
    gold: Check
    seconds: float

    @property
    def ok(self) -> bool:
        return (
            self.empty.error is None
            and self.gold.error is None
            and self.empty.r2e == 0.0
            and self.empty.swebench == 0.0
            and self.gold.r2e == 1.0
            and self.gold.swebench == 1.0
        )


async def check_patch(pool: object, task: SweTask, patch: str, timeout: float) -> Check:  # noqa: ASYNC109
    async with pool.lease() as sb:  # type: ignore[attr-defined]
        await prepare_repo(sb, task)
        try:
            await apply_patch(sb, patch)
        except PatchError as exc:
            return Check(None, None, str(exc))
        res = await grade(sb, task, grader="r2e", timeout=timeout)
    if res.infra_error:
        return Check(None, None, f"infra: {res.infra_error}")
    consistent = res.metrics.get("log_inconsistent", 0.0) == 0.0
    swe, _ = score_statuses(task, res.statuses, "swebench", log_consistent=consistent)
    return Check(res.reward, swe)


async def validate_tasks(
    tasks: Sequence[SweTask],
    *,
    backend: str | None = None,
    concurrency: int = 4,
    timeout: float = 120.0,  # noqa: ASYNC109 - per test run
    limits: SandboxLimits | None = None,
) -> list[TaskReport]:
    """Check every task in sandboxes of ``backend`` (default: the best available), under ``limits``
    (default: those of rollouts, ``swe_env.limits.sandbox_limits()``)."""
    from verifiers.sandbox import SandboxPool, get_backend

    limits = limits or sandbox_limits()
    async with SandboxPool(get_backend(backend), size=concurrency, limits=limits) as pool:

        async def one(task: SweTask) -> TaskReport:
            t0 = time.perf_counter()
            if not task.gold_patch:
                missing = Check(None, None, "no gold patch")
                return TaskReport(task.task_id, missing, missing, 0.0)
            empty, gold = await asyncio.gather(
                check_patch(pool, task, "", timeout), check_patch(pool, task, task.gold_patch, timeout)
            )
            return TaskReport(task.task_id, empty, gold, time.perf_counter() - t0)

        return list(await asyncio.gather(*(one(t) for t in tasks)))


def _fmt(c: Check) -> str:
    if c.error:
        return "ERR"
    return f"{c.r2e:g}/{c.swebench:g}"


def format_table(reports: Sequence[TaskReport], backend: str) -> str:
    width = max([len("task"), *(len(r.task_id) for r in reports)])
    lines = [
        f"{'task':<{width}}  {'empty r2e/swe':>13}  {'gold r2e/swe':>12}  {'s':>5}  result",
        "-" * (width + 46),
    ]
    for r in reports:
        lines.append(
            f"{r.task_id:<{width}}  {_fmt(r.empty):>13}  {_fmt(r.gold):>12}  {r.seconds:5.1f}  {'ok' if r.ok else 'FAIL'}"
        )
        for label, c in (("empty", r.empty), ("gold", r.gold)):
            if c.error:
                lines.append(f"    {label}: {c.error[:300]}")
    bad = sum(not r.ok for r in reports)
    lines.append(
        f"{len(reports) - bad}/{len(reports)} tasks agree (expected empty 0/0, gold 1/1) on {backend}"
    )
    return "\n".join(lines)


def _limits_arg(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg}), e.g. '{{\"memory_mb\": 4096}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            "a JSON object of SandboxLimits fields, e.g. '{\"memory_mb\": 4096}'"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m swe_env.validate", description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=SOURCES, default="bundled", help="as load_environment's `source`")
    ap.add_argument(
        "--rows", default=None, metavar="FILE",
        help="--source r2e/swebench: the dataset rows, a JSON list or JSON Lines file",
    )  # fmt: skip
    ap.add_argument("--num-tasks", type=int, default=None, help="check only the first N tasks")
    ap.add_argument("--seed", type=int, default=0, help="generator seed (--source generated)")
    ap.add_argument("--backend", choices=["runsc", "bwrap"], default=None, help="default: the best available")
    ap.add_argument("--concurrency", type=int, default=4, help="sandboxes in the pool")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test run (grade_timeout)")
    ap.add_argument(
        "--sandbox-limits", type=_limits_arg, default=None, metavar="JSON",
        help="overrides of the rollouts' sandbox limits, as load_environment's `sandbox_limits`",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.source in ("r2e", "swebench") and args.rows is None:
        ap.error(f"--source {args.source} needs --rows FILE (a JSON list or JSON Lines file of rows)")
    if args.rows is not None and args.source not in ("r2e", "swebench"):
        ap.error("--rows is for --source r2e or swebench")

    from verifiers.sandbox import get_backend

    try:
        limits = sandbox_limits(overrides=args.sandbox_limits)
    except ValueError as exc:
        ap.error(str(exc))
    backend = get_backend(args.backend).name
    t0 = time.perf_counter()
    if args.source == "generated":
        from swe_env.generate import generate_tasks

        tasks = generate_tasks(num_tasks=args.num_tasks, seed=args.seed, backend=backend)
    else:
        try:
            tasks = load_tasks(args.source, num_tasks=args.num_tasks, rows=args.rows)
        except ValueError as exc:  # a row that cannot be converted (UnsupportedRowError included)
            ap.exit(2, f"{ap.prog}: error: {exc}\n")
    t_load = time.perf_counter() - t0
    reports = asyncio.run(
        validate_tasks(
            tasks, backend=backend, concurrency=args.concurrency, timeout=args.timeout, limits=limits
        )
    )
    print(format_table(reports, backend))
    print(
        f"limits (as rollouts): {limits.memory_mb} MB, {limits.max_procs} processes, {limits.max_threads} "
        f"threads, {limits.cpu_s} CPU s per process, {limits.workspace_mb} MB workspace"
    )
    print(f"load/generate {t_load:.1f}s, validate {time.perf_counter() - t0 - t_load:.1f}s")
    if not reports:
        print("no tasks to validate", file=sys.stderr)
        return 1
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
