"""MathRubric throughput and verdict agreement vs. a plain math-verify loop (issue: reasoning envs).

Builds N (completion, answer) pairs shaped like RL scoring: P problems x R rollouts each, answers in varied
notations (integers, decimals, fractions, radicals, pi, intervals, sets, tuples, equations; ~20% wrong),
some behind a closed ``<think>`` block. The pairs arrive as one interleaved stream (rollouts of many
groups finishing in any order), which is the order both scorers see unless ``--order grouped``.

In the same run it scores every pair
1. through ``MathRubric`` (``score_rollout`` per pair, ``--concurrency`` in flight, a fresh rubric whose
   workers are started and warm before the clock starts; pool start-up is printed separately);
2. through a plain single-process loop in a fresh interpreter: the same answer extraction, then
   ``verify(parse("\\boxed{gold}"), parse("\\boxed{answer}"))`` per pair;
and prints items/s for both, their ratio, and the agreement (exit status 1 on any disagreement; a
scoring error counts as one). The two are run ``--repeat`` times, interleaved, because other work on
the machine skews single runs; the median of the paired ratios is the headline figure.

Target on a 2-core machine: MathRubric >= 3x the plain loop, identical verdicts on every pair.

Run: python benchmarks/math_scoring.py [--n 2000] [--rollouts 8] [--workers 2] [--order stream|grouped]
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
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from _smoke import parse_args

Variant = tuple[str, list[str], list[str]]  # gold, right notations, wrong answers


def _frac(p: int, q: int) -> str:
    return f"\\frac{{{p}}}{{{q}}}"


def _integer(rng: random.Random) -> Variant:
    v = rng.randint(-300, 9000)
    return str(v), [str(v), f"{v}.0", f"x = {v}", f"{v}"], [str(v + rng.choice([-2, -1, 1, 10])), str(-v - 1)]


def _decimal(rng: random.Random) -> Variant:
    f = Fraction(rng.randint(1, 199), rng.choice([4, 5, 8, 20, 25, 40]))
    if f.denominator == 1:
        f += Fraction(1, 4)
    p, q = f.numerator, f.denominator
    gold = str(float(f))
    return gold, [gold, _frac(p, q), f"{p}/{q}", gold + "0"], [str(float(f) + 0.1), _frac(q, p)]


def _fraction(rng: random.Random) -> Variant:
    f = Fraction(rng.randint(1, 40), rng.randint(3, 41))
    if f.denominator == 1:
        f = Fraction(f.numerator, f.numerator + 1)
    p, q = f.numerator, f.denominator
    right = [_frac(p, q), f"{p}/{q}", f"\\dfrac{{{p}}}{{{q}}}", _frac(2 * p, 2 * q)]
    return _frac(p, q), right, [_frac(p + 1, q), f"{q}/{p}"]


def _radical(rng: random.Random) -> Variant:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10])
    right = [f"{a}\\sqrt{{{b}}}", f"\\sqrt{{{a * a * b}}}", f"{a} \\sqrt{{{b}}}", f"{a}\\cdot\\sqrt{{{b}}}"]
    return f"{a}\\sqrt{{{b}}}", right, [f"{a + 1}\\sqrt{{{b}}}", f"\\sqrt{{{a * b}}}"]


def _pi(rng: random.Random) -> Variant:
    f = Fraction(rng.randint(1, 11), rng.randint(2, 12))
    p, q = f.numerator, f.denominator
    if q == 1:
        return f"{p}\\pi", [f"{p}\\pi", f"{p} \\pi", f"\\pi \\cdot {p}"], [f"{p + 1}\\pi", str(p)]
    gold = f"\\frac{{{p}\\pi}}{{{q}}}"
    right = [gold, f"{_frac(p, q)}\\pi", f"{p}\\pi/{q}", f"\\frac{{{p} \\pi}}{{{q}}}"]
    return gold, right, [f"\\frac{{{p}\\pi}}{{{q + 1}}}", _frac(p, q)]


def _interval(rng: random.Random) -> Variant:
    a = rng.randint(-9, 3)
    b = a + rng.randint(1, 9)
    lo, hi = rng.choice("(["), rng.choice(")]")
    if lo == "(" and hi == ")":
        hi = "]"  # an open interval reads as a tuple; keep the kind unambiguous
    gold = f"{lo}{a}, {b}{hi}"
    flip = "[" if lo == "(" else "("
    return (
        gold,
        [gold, f"{lo}{a},{b}{hi}", f"\\left{lo}{a}, {b}\\right{hi}"],
        [f"{flip}{a}, {b}{hi}", f"{lo}{a}, {b + 1}{hi}"],
    )


def _set(rng: random.Random) -> Variant:
    xs = sorted(rng.sample(range(-12, 25), 3))

    def s(v: list[int], sep: str = ", ") -> str:
        return "\\{" + sep.join(map(str, v)) + "\\}"

    right = [s(xs), s(xs[::-1]), ", ".join(map(str, xs)), s(xs, ",")]
    return s(xs), right, [s(xs[:2]), s([xs[0], xs[1], xs[2] + 1])]


def _tuple(rng: random.Random) -> Variant:
    x, y = rng.randint(-9, 9), rng.randint(-9, 9)
    if x == y:
        y += 1
    gold = f"({x}, {y})"
    return gold, [gold, f"({x},{y})", f"\\left({x}, {y}\\right)"], [f"({y}, {x})", f"({x}, {y + 1})"]


def _equation(rng: random.Random) -> Variant:
    m, c = rng.randint(2, 9), rng.randint(-9, 9)
    sign = "+" if c >= 0 else "-"
    gold = f"y = {m}x {sign} {abs(c)}"
    right = [gold, f"y={m}x{sign}{abs(c)}", f"y = {c} + {m}x"]
    return gold, right, [f"y = {m + 1}x {sign} {abs(c)}", f"y = {m}x"]


KINDS: list[Callable[[random.Random], Variant]] = [
    _integer,
    _decimal,
    _fraction,
    _radical,
    _pi,
    _interval,
    _set,
    _tuple,
    _equation,
]
_LEADS = [
    "Let me work through this step by step. Simplifying gives",
    "We compute carefully and check the result. Therefore",
    "Combining the terms and reducing, the final answer is",
]


def make_pairs(n: int, rollouts: int, seed: int, order: str) -> list[tuple[str, str]]:
    """``n`` (completion, gold answer) pairs: ``n / rollouts`` problems, ``rollouts`` answers each."""
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    problem = 0
    while len(pairs) < n:
        gold, right, wrong = KINDS[problem % len(KINDS)](rng)
        problem += 1
        for _ in range(min(rollouts, n - len(pairs))):
            ans = rng.choice(wrong) if rng.random() < 0.2 else rng.choice(right)
            text = f"{rng.choice(_LEADS)} $\\boxed{{{ans}}}$."
            if rng.random() < 0.3:
                text = f"<think>\nTry a few cases first; the pattern holds.\n</think>\n{text}"
            pairs.append((text, gold))
    if order == "stream":
        rng.shuffle(pairs)
    return pairs


def plain_loop(pairs: list[tuple[str, str]]) -> tuple[list[bool], float]:
    from math_verify import parse, verify

    from verifiers.parsers import MaybeThinkParser, extract_boxed_answer

    parser = MaybeThinkParser(extract_boxed_answer)
    verify(parse("\\boxed{1}"), parse("\\boxed{1}"))  # import and warm-up, as the workers do
    t0 = time.perf_counter()
    out: list[bool] = []
    for completion, gold in pairs:
        ans = parser.parse(completion)
        if ans is None:
            out.append(False)
            continue
        out.append(bool(verify(parse("\\boxed{" + gold + "}"), parse("\\boxed{" + ans + "}"))))
    return out, time.perf_counter() - t0


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a live process, from /proc (0 where unavailable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass
class RubricRun:
    verdicts: list[bool | None]  # None: a scoring error (counted as a disagreement, never as False)
    elapsed: float
    startup: float
    cpu: float  # parent + workers, scoring only (start-up excluded)
    stats: object


async def rubric_run(pairs: list[tuple[str, str]], workers: int, concurrency: int) -> RubricRun:
    from verifiers.rubrics import MathRubric
    from verifiers.types import State

    rubric = MathRubric(workers=workers)
    t_start = time.perf_counter()
    await rubric.setup()
    await rubric.pool.wait_ready_async()
    startup = time.perf_counter() - t_start
    states = [
        State(
            example_id=i,
            rollout_index=0,
            task="math",
            prompt=[{"role": "user", "content": "Solve."}],
            completion=[{"role": "assistant", "content": completion}],
            answer=gold,
            info={},
            timing={"generation": 0.0, "scoring": 0.0, "total": 0.0},
            error=None,
            metrics={},
            reward=None,
        )
        for i, (completion, gold) in enumerate(pairs)
    ]
    sem = asyncio.Semaphore(concurrency)

    async def one(state: State) -> None:
        async with sem:
            await rubric.score_rollout(state)

    pids = rubric.pool.worker_pids()
    cpu0 = time.process_time() + sum(_proc_cpu(p) for p in pids)
    t0 = time.perf_counter()
    await asyncio.gather(*(one(s) for s in states))
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() + sum(_proc_cpu(p) for p in pids) - cpu0
    stats = rubric.pool.stats
    await rubric.teardown()
    errors = [s["error"] for s in states if s.get("error")]
    if errors:
        print(f"!! {len(errors)} scoring errors, e.g. {errors[0]}")
    verdicts = [None if s.get("error") else s.get("reward") == 1.0 for s in states]
    return RubricRun(verdicts, elapsed, startup, cpu, stats)


def plain_in_subprocess(args: argparse.Namespace) -> tuple[list[bool], float, float]:
    """The plain loop in a fresh interpreter (cold sympy caches, like a fresh worker pool)."""
    cmd = [sys.executable, __file__, "--phase", "plain", "--n", str(args.n), "--rollouts", str(args.rollouts)]
    cmd += ["--order", args.order, "--seed", str(args.seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["verdicts"], data["elapsed"], data["cpu"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rollouts", type=int, default=8, help="answers per problem (RL group size)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=256, help="rollouts being scored at once")
    ap.add_argument("--order", choices=["stream", "grouped"], default="stream")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rubric/plain runs (machine noise)")
    ap.add_argument("--phase", choices=["both", "plain"], default="both", help=argparse.SUPPRESS)
    args = parse_args(ap, argv, n=20, rollouts=2, concurrency=8, repeat=1)

    pairs = make_pairs(args.n, args.rollouts, args.seed, args.order)
    if args.phase == "plain":
        c0 = time.process_time()
        verdicts, elapsed = plain_loop(pairs)
        print(json.dumps({"verdicts": verdicts, "elapsed": elapsed, "cpu": time.process_time() - c0}))
        return 0
    print(
        f"{len(pairs)} pairs, {len({g for _, g in pairs})} distinct answers, "
        f"{len(set(pairs))} distinct (completion, answer) pairs, order={args.order}, "
        f"{args.workers} workers, {os.cpu_count()} CPUs"
    )
    ratios: list[float] = []
    best_rubric = best_plain = 0.0
    disagreements = 0
    for run in range(1, args.repeat + 1):
        t0 = time.perf_counter()
        rr = asyncio.run(rubric_run(pairs, args.workers, args.concurrency))
        verdicts, elapsed, startup, stats = rr.verdicts, rr.elapsed, rr.startup, rr.stats
        rubric_rate = len(pairs) / elapsed
        plain, plain_elapsed, plain_cpu = plain_in_subprocess(args)
        plain_rate = len(pairs) / plain_elapsed
        ratios.append(rubric_rate / plain_rate)
        best_rubric, best_plain = max(best_rubric, rubric_rate), max(best_plain, plain_rate)
        agree = sum(a == b for a, b in zip(verdicts, plain, strict=True))
        disagreements += len(pairs) - agree
        print(
            f"run {run}: MathRubric {rubric_rate:6.1f} items/s ({elapsed:.2f}s, {rr.cpu:.1f} CPU-s; pool start "
            f"{startup:.2f}s) | "
            f"plain loop {plain_rate:6.1f} items/s ({plain_elapsed:.2f}s, {plain_cpu:.1f} CPU-s) | "
            f"{ratios[-1]:.2f}x | agreement {agree}/{len(pairs)} | {time.perf_counter() - t0:.0f}s"
        )
        if run == 1:
            print(f"  pool: {stats}")
            print(f"  correct {sum(plain)}/{len(pairs)} ({sum(plain) / len(pairs):.0%})")
        for (completion, gold), a, b in zip(pairs, verdicts, plain, strict=True):
            if a != b:
                print(f"  DISAGREE gold={gold!r} completion={completion[-60:]!r} rubric={a} plain={b}")
    print(
        f"speed-up: median of paired runs {statistics.median(ratios):.2f}x "
        f"(runs: {', '.join(f'{r:.2f}x' for r in ratios)}); best vs best {best_rubric / best_plain:.2f}x "
        f"({best_rubric:.1f} vs {best_plain:.1f} items/s); disagreements: {disagreements}"
    )
    return 0 if disagreements == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
