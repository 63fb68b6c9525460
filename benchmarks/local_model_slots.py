"""The embedded local model with parallel slots against one slot, measured in the same run.

llama-cpp-python's server answers one request at a time; ``LocalModelServer(slots=N)`` runs N server
processes, each with its share of the cores. This sends the same R chat requests (temperature 0, a fixed
``max_tokens`` the model fills) through ``Client(balance="least_busy")`` to each configuration in turn
and prints the wall time, completion tokens per second and the ratio against one slot.

Usage: python benchmarks/local_model_slots.py [--requests N] [--max-tokens 128] [--configs 1x2,2x1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _smoke import parse_args

from verifiers.clients import Client, Endpoint
from verifiers.clients.local_model import LocalModelServer, cpu_cores

PROMPT = "Write a long story about a lighthouse keeper and the sea, in many short paragraphs."


async def _send_all(urls: list[str], requests: int, max_tokens: int) -> tuple[float, int]:
    client = Client([Endpoint(u) for u in urls], balance="least_busy", timeout=3600, read_timeout=3600)
    messages = [{"role": "user", "content": PROMPT}]
    args = {"temperature": 0.0, "max_tokens": max_tokens}
    try:
        start = time.perf_counter()
        replies = await asyncio.gather(
            *(client.chat("local/smollm2", messages, sampling_args=args) for _ in range(requests))
        )
        took = time.perf_counter() - start
    finally:
        await client.aclose()
    return took, sum(r.completion_tokens or 0 for r in replies)


def measure(slots: int, requests: int, max_tokens: int, threads: int) -> tuple[float, int]:
    with LocalModelServer("local/smollm2", slots=slots, n_threads=threads) as server:
        asyncio.run(_send_all(server.base_urls, slots, 8))  # warm each slot once
        return asyncio.run(_send_all(server.base_urls, requests, max_tokens))


def main() -> None:
    cores = cpu_cores()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=cores)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument(
        "--configs",
        default=f"1x{cores},{cores}x1",
        help="SLOTSxTHREADS, comma-separated; the first is the baseline [default: one slot on every core "
        "(before), then one slot per core]",
    )
    ap.add_argument("--repeat", type=int, default=1)
    opts = parse_args(ap, None, requests=2, max_tokens=8, configs="1x2,2x1")
    configs = [tuple(int(n) for n in c.split("x")) for c in opts.configs.split(",")]
    print(f"{cores} cores; {opts.requests} requests at once, max_tokens {opts.max_tokens}")
    for repeat in range(1, opts.repeat + 1):
        base: float | None = None
        for slots, threads in configs:
            took, tokens = measure(slots, opts.requests, opts.max_tokens, threads)
            base = base or took
            print(
                f"repeat {repeat}: {slots} slot(s) x {threads} thread(s): {took:6.1f} s, {tokens} completion "
                f"tokens, {tokens / took:6.1f} tok/s, wall time / baseline's: {took / base:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
