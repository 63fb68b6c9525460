"""The measured job of eval_overhead.py: a whole vf process evaluating a single-turn env.

Usage: python benchmarks/_eval_job.py BASE_URL N CONCURRENCY OUTPUT_DIR
Prints one JSON line with the steady-state rate (rollouts/s between 10% and 90% done).
"""

import json
import sys
import time

import verifiers as vf


def load_environment(n: int) -> vf.SingleTurnEnv:
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(n)]
    parser = vf.Parser(vf.extract_boxed_answer)

    def correct(completion, answer, parser) -> float:
        return 1.0 if parser.parse_answer(completion) == answer else 0.0

    return vf.SingleTurnEnv(dataset=rows, parser=parser, rubric=vf.Rubric([correct]))


def main() -> None:
    url, n, conc, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    env = load_environment(n)
    stamps: list[float] = []
    marks = {int(n * 0.1), int(n * 0.9)}
    done = 0

    def on_group(states) -> None:
        nonlocal done
        before = done
        done += len(states)
        for m in marks:
            if before < m <= done:
                stamps.append(time.perf_counter())

    run = env.evaluate(url, "bench", num_examples=n, max_concurrent=conc, output_dir=out, on_group=on_group)
    steady = (int(n * 0.9) - int(n * 0.1)) / (stamps[1] - stamps[0])
    print(
        json.dumps(
            {
                "steady": steady,
                "completed": run.metadata.counts.completed,
                "avg_reward": run.metadata.avg_reward,
                "errored": run.metadata.counts.errored,
            }
        )
    )


if __name__ == "__main__":
    main()
