"""Validation mode (no model): every task's empty patch scores 0 and its gold patch 1, under both graders.

```
python -m swe_env.validate [--source bundled|generated] [--num-tasks N] [--seed S] [--backend runsc|bwrap]
                           [--concurrency K]
```

Each check runs in a fresh sandbox of a pool: upload the repository, apply the patch, grade. Both graders
score the same test run. Prints one line per task and exits 1 if any task disagrees (or cannot be
checked: a missing gold patch, an infra error), 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from swe_env.grading import grade, score_statuses
from swe_env.repo import PatchError, apply_patch, prepare_repo
from swe_env.task import SweTask, load_tasks


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
) -> list[TaskReport]:
    """Check every task in sandboxes of ``backend`` (default: the best available)."""
    from verifiers.sandbox import SandboxLimits, SandboxPool, get_backend

    limits = SandboxLimits(timeout_s=timeout, cpu_s=max(10, int(timeout)), memory_mb=768)
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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m swe_env.validate", description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=["bundled", "generated"], default="bundled")
    ap.add_argument("--num-tasks", type=int, default=None, help="check only the first N tasks")
    ap.add_argument("--seed", type=int, default=0, help="generator seed (--source generated)")
    ap.add_argument("--backend", choices=["runsc", "bwrap"], default=None, help="default: the best available")
    ap.add_argument("--concurrency", type=int, default=4, help="sandboxes in the pool")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test run")
    args = ap.parse_args(argv)

    from verifiers.sandbox import get_backend

    backend = get_backend(args.backend).name
    t0 = time.perf_counter()
    if args.source == "generated":
        from swe_env.generate import generate_tasks

        tasks = generate_tasks(num_tasks=args.num_tasks, seed=args.seed, backend=backend)
    else:
        tasks = load_tasks("bundled", num_tasks=args.num_tasks)
    t_load = time.perf_counter() - t0
    reports = asyncio.run(
        validate_tasks(tasks, backend=backend, concurrency=args.concurrency, timeout=args.timeout)
    )
    print(format_table(reports, backend))
    print(f"load/generate {t_load:.1f}s, validate {time.perf_counter() - t0 - t_load:.1f}s")
    if not reports:
        print("no tasks to validate", file=sys.stderr)
        return 1
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
