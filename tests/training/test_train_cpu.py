"""The CPU training loop of examples/train_cpu learns: tabular policy server ⇄ vf-serve (a subprocess, on
logic-env's boolean expressions) ⇄ group advantages + IcePop loss ⇄ /update_weights.

The loop runs as a script, as a user would run it. A run measures the mean reward over every prompt
before the first step and after the last (``evals``) and per training batch (``history``); uniform
answering scores 0.25, and a run that learns ends near 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "train_cpu" / "train.py"


def run_loop(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "metrics.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--metrics-out", str(out), "--log-every", "0", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


SHORT = ["--num-examples", "32", "--steps", "80", "--lr", "8", "--eval-every", "1000", "--eval-rollouts", "8"]


@pytest.mark.parametrize("seed", [0, 1])
def test_reward_rises(tmp_path: Path, seed: int) -> None:
    result = run_loop(tmp_path, *SHORT, "--seed", str(seed))
    history, evals = result["history"], result["evals"]
    first, last = evals[0]["reward"], evals[-1]["reward"]
    assert first < 0.45, evals  # a uniform policy over 4 answers, one of them right: 0.25
    assert last > first + 0.35, evals
    rewards = [h["reward"] for h in history]
    assert np.mean(rewards[-8:]) > np.mean(rewards[:8]) + 0.2, rewards
    assert all(h["errored"] == 0 for h in history)
    # async level 1: each batch was requested one policy step back (how much of it the server sampled
    # before the next weights arrived depends on timing: see the lagging-weights test for the ratios)
    assert any(h.get("off_policy_steps") == 1.0 for h in history)
    assert all(h["stale_dropped"] == 0 for h in history)  # max_off_policy_steps 1 keeps them all


def test_lagging_weights_exercise_the_importance_ratios(tmp_path: Path) -> None:
    """Weights pushed every 4 updates: most batches are sampled from weights older than the trainer's,
    so IcePop sees ratios != 1 (and corrects for them), and the policy still learns."""
    args = [*SHORT, "--push-every", "4", "--max-off-policy-steps", "4"]
    result = run_loop(tmp_path, *args)
    trained = [h for h in result["history"] if "mismatch_kl" in h]
    assert sum(h["mismatch_kl"] > 0 for h in trained) >= len(trained) / 2, trained
    assert max(h["off_policy_steps"] for h in result["history"]) >= 3
    evals = result["evals"]
    assert evals[-1]["reward"] > evals[0]["reward"] + 0.35, evals


@pytest.mark.parametrize("source", ["vf-serve", "in-process"])
def test_on_policy_logprobs_round_trip_exactly(tmp_path: Path, source: str) -> None:
    """Synchronous (async level 0): the recorded logprobs equal the trainer's, so every ratio is 1, through
    vf-serve and through the in-process engine alike."""
    args = ["--num-examples", "16", "--steps", "15", "--eval-every", "0"]
    if source == "in-process":
        args.append("--in-process")
    result = run_loop(tmp_path, *args, "--async-level", "0", "--max-off-policy-steps", "0")
    trained = [h for h in result["history"] if "mismatch_kl" in h]
    assert trained
    assert all(h["mismatch_kl"] == 0.0 and h["kept"] == 1.0 for h in trained)
    assert all(h["off_policy_steps"] == 0 for h in result["history"])
