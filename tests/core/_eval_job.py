"""A subprocess for kill/resume tests: evaluates a small env into a run directory.

Usage: python tests/core/_eval_job.py URL OUT_DIR N R [--resume] [--block-setup]

``--block-setup``: the environment's ``setup()`` prints ``SETUP`` and never returns (a run stuck in
start-up).
"""

from __future__ import annotations

import asyncio
import sys

import verifiers as vf


def build_env() -> vf.SingleTurnEnv:
    rows = [{"question": f"q{i}", "answer": "ok"} for i in range(int(sys.argv[3]))]

    def correct(completion, answer) -> float:
        return float(completion[-1]["content"] == answer)

    env = vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric([correct]), env_id="kill-test")
    if "--block-setup" in sys.argv:

        async def setup() -> None:
            print("SETUP", flush=True)
            await asyncio.Event().wait()

        env.setup = setup  # type: ignore[method-assign]
    return env


if __name__ == "__main__":
    url, out, n, r = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    run = build_env().evaluate(
        url, "m", rollouts_per_example=r, max_concurrent=4, output_dir=out, resume="--resume" in sys.argv
    )
    print("STATUS", run.metadata.status, run.metadata.counts.completed, flush=True)
