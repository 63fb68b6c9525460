"""AIME scoring at the suite's size: 30 problems x 32 rollouts of ~30k characters each (issue 31).

Builds P problems (integer answers 0-999, written here) and R completions per problem shaped like a
reasoning model's: a long ``<think>`` block (``--chars`` characters of arithmetic, with boxed guesses inside
it that must be ignored), then a short answer with ``\\boxed{N}``. About 60% are right (in AIME's notations:
``42``, ``042``, ``42.0``), 25% name another integer, and the rest give no box or are cut off inside
``<think>``. Hostile answers (huge nested fractions, power towers) are scored besides, only by the rubric,
to show its hard timeout holds.

In the same run it measures
1. the whole eval: ``aime2025`` (``source=`` the problems as a file) evaluated against an in-process
   OpenAI-compatible server that replies with the completions, ``--concurrency`` rollouts in flight: the
   run's wall time, and the rubric's share of it (that wall time minus the same run scored by a rubric
   that only reads the box, over the run's wall time);
2. scoring alone: every (completion, answer) pair through ``MathRubric`` (warm workers, ``--concurrency``
   in flight) and through a plain single-process math-verify loop in a fresh interpreter (the same
   extraction, then ``verify(parse(gold), parse(answer))``), ``--repeat`` times interleaved; the median of
   the paired ratios is the headline figure, and the verdicts must agree;
3. no completion over its hard timeout: every rollout's ``verify_seconds`` is at most ``verify_timeout``
   (plus the pool's kill slack), the hostile ones included.

Exit status 1 on a disagreement, a scoring error, a wrong reward in the eval or a completion over its
timeout. Goal on a 2-core machine: scoring >= 3x the plain loop (as math-env's benchmark holds).

Run: python benchmarks/aime_scoring.py [--problems 30] [--rollouts 32] [--chars 30000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _smoke import parse_args
from aiohttp import web
from math_scoring import plain_loop, rubric_run

#: The pool's allowance beyond ``verify_timeout`` before a stuck worker is killed and replaced.
KILL_SLACK_S = 2.0
HOSTILE = [
    "\\boxed{" + "\\frac{" * 120 + "1" + "}{2}" * 120 + "}",
    "\\boxed{" + "9^" * 300 + "9}",
    "\\boxed{10^{10^{10^{10}}}}",
    "\\boxed{" + "{" * 50_000 + "}",
]


def problems(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    answers = rng.sample(range(1000), n)
    return [
        {
            "question": f"Benchmark problem {i}: find the integer $N$ with $0 \\le N \\le 999$ described here.",
            "answer": str(a),
        }
        for i, a in enumerate(answers)
    ]


def reasoning(rng: random.Random, chars: int) -> str:
    """``chars`` characters of plausible arithmetic, with a boxed guess now and then (inside the think)."""
    parts: list[str] = []
    size = 0
    while size < chars:
        a, b = rng.randint(2, 999), rng.randint(2, 99)
        line = rng.choice(
            [
                f"Try $a = {a}$: then $a \\cdot {b} = {a * b}$ and modulo $1000$ that is ${a * b % 1000}$.\n",
                f"If $x^2 = {a * a}$ then $x = {a}$; checking $x + {b} = {a + b}$ against the constraint.\n",
                f"Maybe the answer is \\boxed{{{(a * b) % 1000}}}? No, the case $n = {b}$ fails.\n",
                f"Summing $\\frac{{{a}}}{{{b}}}$ over the cases gives ${a}/{b}$, not an integer; go on.\n",
            ]
        )
        parts.append(line)
        size += len(line)
    return "".join(parts)[:chars]


def completions(probs: list[dict[str, str]], rollouts: int, chars: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed + 1)
    out = []
    for p in probs:
        gold = int(p["answer"])
        texts = []
        for _ in range(rollouts):
            think = reasoning(rng, chars)
            roll = rng.random()
            if roll < 0.6:
                shown = rng.choice([str(gold), f"{gold:03d}", f"{gold}.0"])
                texts.append(f"<think>\n{think}\n</think>\nTherefore the answer is $\\boxed{{{shown}}}$.")
            elif roll < 0.85:
                texts.append(
                    f"<think>\n{think}\n</think>\nSo $\\boxed{{{(gold + rng.randint(1, 998)) % 1000}}}$."
                )
            elif roll < 0.93:
                texts.append(f"<think>\n{think}\n</think>\nThe answer is {gold}.")  # no box: 0
            else:
                texts.append(f"<think>\n{think}")  # cut off inside the reasoning: 0, truncated
        out.append(texts)
    return out


def expected_reward(text: str, gold: str) -> float:
    tail = text.rsplit("</think>", 1)[-1] if "</think>" in text else None
    if tail is None or "\\boxed{" not in tail:
        return 0.0
    shown = tail.rsplit("\\boxed{", 1)[1].split("}", 1)[0]
    return 1.0 if int(float(shown)) == int(gold) else 0.0


async def serve(probs: list[dict[str, str]], texts: list[list[str]]) -> tuple[web.AppRunner, str]:
    """An OpenAI-compatible server replying to problem i with its completions in turn."""
    turn = [0] * len(probs)

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        user = body["messages"][-1]["content"]
        i = next(k for k, p in enumerate(probs) if user.startswith(p["question"]))
        text = texts[i][turn[i] % len(texts[i])]
        turn[i] += 1
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        usage = {
            "prompt_tokens": 40,
            "completion_tokens": len(text) // 4,
            "total_tokens": 40 + len(text) // 4,
        }
        return web.json_response({"id": "b", "object": "chat.completion", "created": 0, "model": "bench",
                                  "choices": [choice], "usage": usage})  # fmt: skip

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench", "object": "model"}]})

    app = web.Application(client_max_size=1 << 26)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1"


def box_only_rubric() -> Any:
    """The box-reading part of the rubric alone: the eval's wall time without math-verify."""
    import verifiers as vf
    from verifiers.parsers import MaybeThinkParser, extract_boxed_answer

    parser = MaybeThinkParser(extract_boxed_answer)

    def boxed(completion: Any) -> float:
        return 1.0 if parser.parse_answer(completion) is not None else 0.0

    return vf.Rubric(funcs=[boxed])


async def full_eval(
    source: Path, probs: list[dict[str, str]], texts: list[list[str]], args: argparse.Namespace
) -> tuple[float, float, list[dict[str, Any]]]:
    import verifiers as vf

    runner, url = await serve(probs, texts)
    try:
        walls = []
        results: list[dict[str, Any]] = []
        for rubric in ("math", "box-only"):
            env = vf.load_environment("aime2025", source=str(source), verify_workers=args.workers)
            if rubric == "box-only":
                env.rubric = box_only_rubric()
            t0 = time.perf_counter()
            run = await env.a_evaluate(
                url,
                "bench",
                rollouts_per_example=args.rollouts,
                max_concurrent=args.concurrency,
                save_results=False,
            )
            walls.append(time.perf_counter() - t0)
            if rubric == "math":
                results = run.results
        return walls[0], walls[1], results
    finally:
        await runner.cleanup()


async def hostile_seconds(workers: int, verify_timeout: float) -> list[float]:
    from verifiers.rubrics import MathRubric
    from verifiers.types import State

    rubric = MathRubric(workers=workers, timeout=verify_timeout)
    await rubric.setup()
    states = [
        State(example_id=i, rollout_index=0, task="aime", prompt=[{"role": "user", "content": "Q"}],
              completion=[{"role": "assistant", "content": text}], answer="7", info={},
              timing={"generation": 0.0, "scoring": 0.0, "total": 0.0}, error=None, metrics={}, reward=None)
        for i, text in enumerate(HOSTILE)
    ]  # fmt: skip
    try:
        await asyncio.gather(*(rubric.score_rollout(s) for s in states))
    finally:
        await rubric.teardown()
    bad = [s for s in states if s.get("error") is not None or s.get("reward") != 0.0]
    if bad:
        raise SystemExit(
            f"!! hostile answers were not scored 0: {[s.get('error') or s.get('reward') for s in bad]}"
        )
    return [float(s["metrics"].get("verify_seconds", 0.0)) for s in states]


def plain_in_subprocess(pairs_file: Path) -> tuple[list[bool], float]:
    cmd = [sys.executable, __file__, "--phase", "plain", "--pairs", str(pairs_file)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["verdicts"], data["elapsed"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", type=int, default=30)
    ap.add_argument("--rollouts", type=int, default=32)
    ap.add_argument("--chars", type=int, default=30_000, help="characters of reasoning per completion")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--verify-timeout", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--phase", choices=["all", "plain"], default="all", help=argparse.SUPPRESS)
    ap.add_argument("--pairs", type=Path, help=argparse.SUPPRESS)
    args = parse_args(ap, argv, problems=3, rollouts=2, chars=2000, concurrency=8, repeat=1)

    if args.phase == "plain":
        pairs = [tuple(p) for p in json.loads(args.pairs.read_text())]
        verdicts, elapsed = plain_loop(pairs)  # type: ignore[arg-type]
        print(json.dumps({"verdicts": verdicts, "elapsed": elapsed}))
        return 0

    probs = problems(args.problems, args.seed)
    texts = completions(probs, args.rollouts, args.chars, args.seed)
    pairs = [(t, p["answer"]) for p, ts in zip(probs, texts, strict=True) for t in ts]
    mean_chars = statistics.mean(len(t) for t, _ in pairs)
    print(
        f"{len(probs)} problems x {args.rollouts} rollouts = {len(pairs)} completions, {mean_chars:,.0f} chars "
        f"each on average; {args.workers} workers, {os.cpu_count()} CPUs"
    )
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "problems.jsonl"
        source.write_text("".join(json.dumps(p) + "\n" for p in probs))
        pairs_file = Path(tmp) / "pairs.json"
        pairs_file.write_text(json.dumps(pairs))

        wall, wall_box_only, results = asyncio.run(full_eval(source, probs, texts, args))
        by_example: dict[int, list[dict[str, Any]]] = {}
        for r in results:
            by_example.setdefault(int(r["example_id"]), []).append(r)
        wrong = 0
        for k, rows in by_example.items():
            served = texts[k]
            for r in rows:
                text = r["completion"][-1]["content"]
                if (
                    r.get("error") is not None
                    or r["reward"] != expected_reward(text, probs[k]["answer"])
                    or text not in served
                ):
                    wrong += 1
        truncated = sum(r["metrics"].get("truncated", 0.0) for r in results)
        slowest = max((r["metrics"].get("verify_seconds", 0.0) for r in results), default=0.0)
        share = max(0.0, wall - wall_box_only) / wall
        print(
            f"eval: {len(results)} rollouts in {wall:.2f}s ({len(results) / wall:.0f}/s); the same run scored by "
            f"a box-only rubric {wall_box_only:.2f}s: the rubric's share of the wall time {share:.0%}; "
            f"mean reward {statistics.mean(r['reward'] or 0.0 for r in results):.3f}, truncated {truncated:.0f}, "
            f"wrong rewards {wrong}"
        )
        failures += wrong + (len(results) != len(pairs))

        ratios = []
        for run in range(1, args.repeat + 1):
            rr = asyncio.run(rubric_run(pairs, args.workers, args.concurrency))
            plain, plain_elapsed = plain_in_subprocess(pairs_file)
            rubric_rate, plain_rate = len(pairs) / rr.elapsed, len(pairs) / plain_elapsed
            ratios.append(rubric_rate / plain_rate)
            agree = sum(a == b for a, b in zip(rr.verdicts, plain, strict=True))
            failures += len(pairs) - agree
            print(
                f"run {run}: MathRubric {rubric_rate:7.1f} completions/s ({rr.elapsed:.2f}s; pool start "
                f"{rr.startup:.2f}s) | plain math-verify loop {plain_rate:7.1f}/s ({plain_elapsed:.2f}s) | "
                f"{ratios[-1]:.2f}x | agreement {agree}/{len(pairs)}"
            )

    hostile = asyncio.run(hostile_seconds(args.workers, args.verify_timeout))
    slowest = max(slowest, *hostile)
    limit = args.verify_timeout + KILL_SLACK_S
    over = sum(s > limit for s in hostile) + sum(
        r["metrics"].get("verify_seconds", 0.0) > limit for r in results
    )
    failures += over
    print(
        f"hard timeout: slowest verification {slowest:.2f}s (hostile answers: "
        f"{', '.join(f'{s:.2f}s' for s in hostile)}), limit {args.verify_timeout:.0f}s + {KILL_SLACK_S:.0f}s slack; "
        f"over it: {over}"
    )
    print(
        f"speed-up: median of paired runs {statistics.median(ratios):.2f}x "
        f"(runs: {', '.join(f'{r:.2f}x' for r in ratios)}); goal >= 3x; failures: {failures}"
    )
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
