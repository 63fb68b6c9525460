"""The stand-in trainer of the prime-rl orchestrator tier: run by the Python of ``.venv-prime-rl``.

prime-rl's trainer needs a GPU; what it does with the orchestrator's output before its first forward pass
does not, and is run here with prime-rl's own code. For each step ``N`` it

1. waits for ``OUTPUT_DIR/rollouts/step_N/rollouts.bin`` (what the orchestrator's filesystem transport
   writes) and decodes it with prime-rl's ``TrainingBatch`` type (``msgspec``, as its receiver does);
2. checks every sample with the packer's own ``MultiPacker._validate_sample`` (which evicts a run that
   writes a sample the trainer would crash on) and packs the batch with ``trainer.batch.prepare_batch``
   into micro batches for one data-parallel rank;
3. writes what it received to ``REPORT_DIR/step_N.json`` for the test to check;
4. publishes ``OUTPUT_DIR/broadcasts/step_{N+1}/`` with a ``STABLE`` marker, as the filesystem weight
   broadcast does once a step's weights are written, so the orchestrator moves on and tells the inference
   server to load them.

    python prime_rl_trainer.py --output-dir DIR --steps 3 --seq-len 4096 --report-dir REPORT
"""

from __future__ import annotations

import argparse
import json
import time
import types
from pathlib import Path

import msgspec
from prime_rl.trainer.batch import prepare_batch
from prime_rl.trainer.rl.packer import MultiPacker
from prime_rl.transport.types import TrainingBatch, TrainingSample


def wait_for(path: Path, deadline: float) -> None:
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"stand-in trainer: {path} did not appear")
        time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output-dir", type=Path, required=True, help="the orchestrator's output_dir")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seq-len", type=int, required=True, help="the trainer's seq_len")
    ap.add_argument("--report-dir", type=Path, required=True)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for all steps")
    args = ap.parse_args()
    args.report_dir.mkdir(parents=True, exist_ok=True)
    decoder = msgspec.msgpack.Decoder(type=TrainingBatch)
    packer = types.SimpleNamespace(seq_len=args.seq_len)  # all _validate_sample reads of the packer
    deadline = time.monotonic() + args.timeout
    for step in range(args.steps):
        path = args.output_dir / "rollouts" / f"step_{step}" / "rollouts.bin"
        wait_for(path, deadline)
        batch = decoder.decode(path.read_bytes())
        invalid = [
            reason
            for s in batch.examples
            for ok, reason in [MultiPacker._validate_sample(packer, s)]
            if not ok
        ]
        grid = prepare_batch(
            rollouts=batch.examples,
            seq_len=args.seq_len,
            num_train_workers=1,
            idxs=[0] * len(batch.examples),
            num_loras=1,
        )
        report = {
            "step": batch.step,
            "invalid": invalid,
            "samples": [{f: getattr(s, f) for f in TrainingSample.__struct_fields__} for s in batch.examples],
            "micro_batches": [
                {
                    "input_ids": mb.input_ids,
                    "loss_mask": mb.loss_mask,
                    "advantages": mb.advantages,
                    "inference_logprobs": mb.inference_logprobs,
                    "position_ids": mb.position_ids,
                }
                for rank in grid
                for mb in rank
            ],
        }
        (args.report_dir / f"step_{step}.json").write_text(json.dumps(report))
        broadcast = args.output_dir / "broadcasts" / f"step_{step + 1}"
        broadcast.mkdir(parents=True, exist_ok=True)
        (broadcast / "STABLE").touch()
        print(f"stand-in trainer: step {step}: {len(batch.examples)} samples", flush=True)


if __name__ == "__main__":
    main()
