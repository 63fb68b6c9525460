"""vf-eval's token flags end to end: ``--return-tokens`` asks the (vLLM-like) scripted server for tokens,
the run records them as trajectories and the sampling arguments as sent; ``--max-seq-len`` and
``--drop-thinking`` reach the environment."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._helpers import SERVER, run_cli
from verifiers.trajectory import token_samples
from verifiers.types import RolloutResult


@pytest.fixture
def vllm_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--tokenize", "--default", "a0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def test_return_tokens_records_trajectories(workdir: Path, vllm_url: str) -> None:
    out = workdir / "run"
    flags = ["-m", "m", "-b", vllm_url, "-n", "2", "-r", "1", "-o", str(out)]
    res = run_cli(
        "vf-eval",
        "cli-env",
        *flags,
        "--return-tokens",
        "both",
        "--max-seq-len",
        "512",
        "--drop-thinking",
        cwd=workdir,
    )
    assert res.code == 0, res.stderr
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["sampling_args"]["logprobs"] is True
    assert meta["sampling_args"]["extra_body"] == {
        "return_tokens_as_token_ids": True,
        "return_token_ids": True,
    }
    rows = [
        RolloutResult.model_validate_json(line) for line in (out / "results.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2
    for row in rows:
        (step,) = row.trajectory
        assert bytes(t for t in step.completion_ids if t < 256) == b"a0"
        assert step.completion_logprobs is not None and len(step.completion_logprobs) == len(
            step.completion_ids
        )
        (sample,) = token_samples(row.trajectory)
        assert sample.completion_mask == [1] * len(step.completion_ids)
    bad = run_cli("vf-eval", "cli-env", *flags, "--return-tokens", "all", "--dry-run", cwd=workdir)
    assert bad.code != 0 and "--return-tokens" in bad.stderr
