"""swe-env tool latency: 32 concurrent scripted R2E rollouts of 30 tool calls each, per backend.

Run:  .venv/bin/python benchmarks/swe_env.py [--backends runsc,bwrap] [--rollouts 32] [--calls 30]
          [--alone-calls 122] [--json out.json]

Per tool (``file_editor`` view / str_replace, ``search``, ``execute_bash`` of ``cat`` / ``grep`` /
``python3 -c``) it prints p50/p95 of the call as the environment runs it (argument parsing, the sandbox
round trip, formatting), in two phases: one rollout alone (``--alone-calls`` calls, so that each kind's p50
has ~20 samples), then ``--rollouts`` at once. Baselines measured in the same run: a bare host
``subprocess.run`` of the equivalent command (``cat -n`` for a view, a ``python3 -c`` rewrite for
str_replace, ``grep -rc`` for search, the same command for bash), and the
backend's own fork/exec floor (a warm ``exec(["true"])``, alone, and from ``--rollouts`` sandboxes at once
for the concurrent phase). Also: grading time per task, and whether any sandbox was created during the
rollouts (the warm pool must keep sandbox starts off the critical path). Targets (issue 12): file_editor
and search p50 <= 15 ms on runsc and <= 8 ms on bwrap; execute_bash within 1.5x the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _smoke import parse_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "environments" / "swe_env"))

from swe_env.scaffolds.r2e import R2EEnv  # noqa: E402
from swe_env.sources import load_tasks  # noqa: E402
from swe_env.task import SweTask  # noqa: E402

import verifiers as vf  # noqa: E402
from tests.scripted_server import Reply, ScriptedServer, tool_call  # noqa: E402
from verifiers.clients import as_client  # noqa: E402
from verifiers.sandbox import SandboxLimits, available_backends, get_backend  # noqa: E402

REPO = "/workspace/repo"
PY_CODE = "import json; print(json.dumps({'ok': 1}))"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "p50_ms": pct(xs, 0.5) * 1e3, "p95_ms": pct(xs, 0.95) * 1e3}


def module_of(task: SweTask) -> str:
    return next(p for p in sorted(task.repo_files) if p.endswith(".py") and not p.startswith("tests"))


def plan_for(task: SweTask, calls: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, tool, arguments)`` of one rollout: create a scratch file, then cycle through the kinds."""
    mod = module_of(task)
    cycle: list[tuple[str, str, dict[str, Any]]] = [
        ("file_editor view", "file_editor", {"command": "view", "path": f"{REPO}/{mod}"}),
        ("file_editor str_replace", "file_editor", {"command": "str_replace", "path": f"{REPO}/scratch.py"}),
        ("search", "search", {"search_term": "def "}),
        ("execute_bash cat", "execute_bash", {"cmd": f"cat {mod}"}),
        ("execute_bash grep", "execute_bash", {"cmd": f"grep -n def {mod}"}),
        ("execute_bash python -c", "execute_bash", {"cmd": f'python3 -c "{PY_CODE}"'}),
    ]
    steps: list[tuple[str, str, dict[str, Any]]] = [
        (
            "file_editor create",
            "file_editor",
            {"command": "create", "path": f"{REPO}/scratch.py", "file_text": "MARK_0 = 0\n"},
        )
    ]
    for i in range(calls - 2):
        kind, tool, args = cycle[i % len(cycle)]
        if kind == "file_editor str_replace":
            n = sum(1 for k, _, _ in steps if k == kind)
            args = {**args, "old_str": f"MARK_{n}", "new_str": f"MARK_{n + 1}"}
        steps.append((kind, tool, args))
    steps.append(("finish", "finish", {"command": "submit"}))
    return steps


class TimedR2E(R2EEnv):
    """Records how long every tool call takes, by kind (the call's id carries it)."""

    samples: dict[str, list[float]]

    async def call_tool(
        self, call: Mapping[str, Any], index: int, messages: vf.Messages, state: vf.State
    ) -> vf.ChatMessage:
        t0 = time.perf_counter()
        out = await super().call_tool(call, index, messages, state)
        kind = str(call.get("id", "")).split("|", 1)[0]
        self.samples[kind].append(time.perf_counter() - t0)
        return out


def handler_for(tasks: list[SweTask], calls: int) -> Any:
    plans = {t.problem_statement.strip(): plan_for(t, calls) for t in tasks}

    def handler(body: dict[str, Any]) -> Reply:
        first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        plan = next(p for ps, p in plans.items() if ps in first_user)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        kind, tool, args = plan[min(step, len(plan) - 1)]
        return Reply(content="", tool_calls=[tool_call(tool, args, call_id=f"{kind}|{step}")])

    return handler


def host_baselines(task: SweTask, n: int) -> dict[str, dict[str, float]]:
    """Bare ``subprocess.run`` on the host of what each tool kind does, in a copy of the repository."""
    tmp = Path(tempfile.mkdtemp(prefix="swe-bench-"))
    try:
        for rel, text in task.repo_files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
        (tmp / "scratch.py").write_text("MARK_0 = 0\n")
        mod = module_of(task)
        replace = "import pathlib,sys; p=pathlib.Path('scratch.py'); p.write_text(p.read_text().replace('MARK','MARK'))"
        commands = {
            "file_editor view": ["cat", "-n", mod],
            "file_editor str_replace": [sys.executable, "-I", "-S", "-c", replace],
            "search": ["grep", "-rc", "--include=*.py", "def ", "."],
            "execute_bash cat": ["cat", mod],
            "execute_bash grep": ["grep", "-n", "def", mod],
            "execute_bash python -c": [sys.executable, "-I", "-S", "-c", PY_CODE],
        }
        out: dict[str, list[float]] = defaultdict(list)
        for _ in range(n):  # interleaved, so load from elsewhere hits every series alike
            for kind, argv in commands.items():
                t0 = time.perf_counter()
                subprocess.run(argv, cwd=tmp, capture_output=True, check=False)
                out[kind].append(time.perf_counter() - t0)
        return {k: summary(v) for k, v in out.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def exec_floor(backend_name: str, concurrency: int, n: int) -> dict[str, float]:
    """Warm ``exec(["true"])`` from ``concurrency`` sandboxes at once, ``n`` each."""
    backend = get_backend(backend_name)
    sandboxes = [await backend.create(SandboxLimits()) for _ in range(concurrency)]
    try:
        for sb in sandboxes:
            await sb.exec(["true"])
        times: list[float] = []

        async def loop(sb: Any) -> None:
            for _ in range(n):
                t0 = time.perf_counter()
                await sb.exec(["true"])
                times.append(time.perf_counter() - t0)

        await asyncio.gather(*(loop(sb) for sb in sandboxes))
        return summary(times)
    finally:
        await asyncio.gather(*(sb.destroy() for sb in sandboxes))


async def phase(
    backend_name: str, tasks: list[SweTask], rollouts: int, calls: int
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    env = TimedR2E(tasks=tasks, backend=backend_name, pool_size=rollouts, max_turns=calls + 1)
    env.samples = defaultdict(list)
    await env.setup()  # the warm pool: every sandbox starts here, before the clock
    pool = await env.sandbox_pool()
    created_before = pool.stats["created"]
    rows = env.select_rows()
    per_task = -(-rollouts // len(rows))
    with ScriptedServer(handler=handler_for(tasks, calls)) as server:
        client = as_client(server.url)
        try:
            t0 = time.perf_counter()
            states = await env.a_generate(
                rows[: max(1, min(len(rows), rollouts))],
                client,
                "scripted",
                rollouts_per_example=per_task if rollouts > 1 else 1,
                max_concurrent=rollouts,
            )
            wall = time.perf_counter() - t0
        finally:
            await client.aclose()
            created_during = pool.stats["created"] - created_before
            await env.teardown()
    errors = [s["error"] for s in states if s.get("error")]
    grading = [s["metrics"].get("grading_s", float("nan")) for s in states if not s.get("error")]
    info = {
        "rollouts": len(states),
        "errors": errors[:3],
        "n_errors": len(errors),
        "avg_reward": statistics.fmean([s.get("reward") or 0.0 for s in states]),
        "wall_s": wall,
        "sandboxes_created_during_rollouts": created_during,
        "grading_s": summary(grading),
    }
    return {k: summary(v) for k, v in sorted(env.samples.items())}, info


async def bench_backend(
    name: str, rollouts: int, calls: int, tasks: list[SweTask], alone_calls: int
) -> dict[str, Any]:
    print(f"\n== {name} ==", flush=True)
    floor1 = await exec_floor(name, 1, 40)
    alone, alone_info = await phase(name, tasks[:1], 1, alone_calls)
    floor_n = await exec_floor(name, rollouts, max(3, 60 // rollouts))
    together, together_info = await phase(name, tasks, rollouts, calls)
    return {
        "floor_alone": floor1,
        "floor_concurrent": floor_n,
        "alone": alone,
        "alone_info": alone_info,
        "concurrent": together,
        "concurrent_info": together_info,
    }


def report(name: str, res: dict[str, Any], host: dict[str, dict[str, float]], rollouts: int) -> None:
    targets = {"runsc": 15.0, "bwrap": 8.0}
    fa, fc = res["floor_alone"]["p50_ms"], res["floor_concurrent"]["p50_ms"]
    print(f"fork/exec floor (warm `true`) p50: alone {fa:.1f} ms, {rollouts} at once {fc:.1f} ms")
    head = f"{'tool':26} {'alone p50/p95':>16} {'x host':>7} {'x floor':>8} | {f'{rollouts} concurrent p50/p95':>22} {'x floor':>8}"
    print(head)
    for kind in sorted(set(res["alone"]) | set(res["concurrent"])):
        a = res["alone"].get(kind, {"p50_ms": float("nan"), "p95_ms": float("nan")})
        c = res["concurrent"].get(kind, {"p50_ms": float("nan"), "p95_ms": float("nan")})
        h = host.get(kind, {}).get("p50_ms", float("nan"))
        print(
            f"{kind:26} {a['p50_ms']:7.1f}/{a['p95_ms']:7.1f} {a['p50_ms'] / h:7.2f} {a['p50_ms'] / fa:8.2f} | "
            f"{c['p50_ms']:10.1f}/{c['p95_ms']:10.1f} {c['p50_ms'] / fc:8.2f}"
        )
    t = targets.get(name)
    if t is not None:
        for kind in ("file_editor view", "file_editor str_replace", "search"):
            p = res["alone"].get(kind, {}).get("p50_ms", float("nan"))
            print(f"  target {kind} p50 <= {t:g} ms (alone): {p:.1f} ms -> {'ok' if p <= t else 'MISSED'}")
    for kind in ("execute_bash cat", "execute_bash grep", "execute_bash python -c"):
        p = res["alone"].get(kind, {}).get("p50_ms", float("nan"))
        print(
            f"  target {kind} <= 1.5x floor (alone): {p / fa:.2f}x -> {'ok' if p <= 1.5 * fa else 'MISSED'}"
        )
    for phase_name in ("alone_info", "concurrent_info"):
        info = res[phase_name]
        g = info["grading_s"]
        print(
            f"  {phase_name[:-5]}: {info['rollouts']} rollouts in {info['wall_s']:.1f} s, errors {info['n_errors']}, "
            f"avg reward {info['avg_reward']:.2f}, grading per task p50 {g['p50_ms']:.0f} ms / p95 {g['p95_ms']:.0f} ms, "
            f"sandboxes created during the rollouts: {info['sandboxes_created_during_rollouts']}"
        )
        if info["errors"]:
            print(f"  errors: {info['errors']}")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--backends", default=",".join(b for b in ("runsc", "bwrap") if b in available_backends())
    )
    ap.add_argument("--rollouts", type=int, default=32)
    ap.add_argument("--calls", type=int, default=30)
    # The rollout on its own makes more calls, so that each kind's p50 has ~20 samples rather than 5.
    ap.add_argument("--alone-calls", type=int, default=122)
    ap.add_argument("--json", type=Path)
    args = parse_args(ap, None, rollouts=2, calls=8, alone_calls=12)
    tasks = load_tasks("bundled")
    host = host_baselines(tasks[0], 30)
    print("host subprocess.run p50 (ms): " + ", ".join(f"{k} {v['p50_ms']:.1f}" for k, v in host.items()))
    results: dict[str, Any] = {"host": host}
    for name in [b for b in args.backends.split(",") if b]:
        res = await bench_backend(name, args.rollouts, args.calls, tasks, args.alone_calls)
        report(name, res, host, args.rollouts)
        results[name] = res
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    # A rollout that errored makes the figures meaningless: a failure, not a slow run.
    errored = [
        n
        for n, r in results.items()
        if n != "host" and any(r[p]["n_errors"] for p in ("alone_info", "concurrent_info"))
    ]
    return 1 if errored else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
