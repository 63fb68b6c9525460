"""The re-scoring library (verifiers.eval.rescore) and vf-eval's display pieces, without subprocesses."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import verifiers as vf
from verifiers.cli._display import ProgressDisplay, samples_table, summary_table
from verifiers.eval.rescore import RescoreError, rescore
from verifiers.eval.runs import find_resumable, model_slug
from verifiers.types import RunMetadata


def record(
    example_id: int, rollout_index: int, reply: str, *, reward: float | None, error: dict | None = None
) -> dict:
    return {
        "example_id": example_id,
        "rollout_index": rollout_index,
        "task": "default",
        "prompt": [{"role": "user", "content": f"q{example_id}"}],
        "completion": [{"role": "assistant", "content": reply}],
        "answer": f"a{example_id}",
        "info": {},
        "reward": reward,
        "metrics": {},
        "error": error,
        "stop_condition": "answered",
        "is_truncated": False,
        "turns": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        "timing": {"generation": 0.1, "scoring": 0.0, "total": 0.1},
        "env_id": "resc",
        "env_version": "0.1.0",
    }


def metadata(**fields: object) -> RunMetadata:
    base: dict[str, object] = {
        "env_id": "resc",
        "env_version": "0.1.0",
        "env_content_hash": "old",
        "sdk_version": "0",
        "model": "m",
        "base_url": "http://x/v1",
        "num_examples": 2,
        "rollouts_per_example": 2,
        "started_at": "2026-01-01T00:00:00+00:00",
    }
    return RunMetadata.model_validate({**base, **fields})


def write_run(path: Path, records: list[dict]) -> None:
    path.mkdir(parents=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    meta = metadata(status="completed", avg_reward=0.5)
    meta.counts.planned = meta.counts.completed = 4
    (path / "metadata.json").write_text(meta.model_dump_json())


def lenient(completion, answer) -> float:
    return 1.0 if answer in completion[-1]["content"] else 0.0


def test_rescore_keeps_failed_generations_and_rescores_scoring_errors(tmp_path: Path) -> None:
    run = tmp_path / "run"
    scoring_error = {"category": "scoring", "type": "RewardFunctionError", "message": "boom"}
    model_error = {"category": "model", "type": "EmptyResponseError", "message": "empty"}
    write_run(
        run,
        [
            record(0, 0, "a0", reward=1.0),
            record(0, 1, "it is a0!", reward=0.0),
            record(1, 0, "a1", reward=None, error=scoring_error),
            record(1, 1, "", reward=None, error=model_error),
        ],
    )
    original = (run / "results.jsonl").read_bytes()
    env = vf.SingleTurnEnv(dataset=[{"question": "q"}], rubric=vf.Rubric([lenient]), env_id="resc")
    result = rescore(env, run)
    assert result.rescored == 3 and result.kept == 1 and result.changed == 2
    assert [r["reward"] for r in result.results] == [1.0, 1.0, 1.0, None]
    assert result.results[3]["error"] == model_error
    assert result.metadata.avg_reward == 1.0 and result.previous.avg_reward == 0.5
    assert result.metadata.counts.errored == {"model": 1}
    assert (
        result.path is not None
        and result.path.parent == tmp_path
        and result.path.name.startswith("run.rescored-")
    )
    assert (run / "results.jsonl").read_bytes() == original
    saved = RunMetadata.model_validate_json((result.path / "metadata.json").read_bytes())
    assert saved.extra["rescored_from"]["avg_reward"] == 0.5
    with pytest.raises(RescoreError, match="already holds a run"):
        rescore(env, run, output_dir=result.path)
    other = vf.SingleTurnEnv(dataset=[{"question": "q"}], rubric=vf.Rubric([lenient]), env_id="other")
    with pytest.raises(RescoreError, match="not 'other'"):
        rescore(other, run, save=False)


def test_plain_progress_lines_and_summary() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    progress = vf.RunProgress(total=4, generated=2, done=2, scored=2, reward_sum=1.0, errors={"infra": 1})

    async def show() -> None:
        async with ProgressDisplay(console, progress, "env · m"):
            await asyncio.sleep(0.05)

    asyncio.run(show())
    line = buf.getvalue().strip().splitlines()[-1]
    assert line.startswith("env · m: 2/4 rollouts (50%)")
    assert "mean reward 0.500" in line and "errors: infra 1" in line

    meta = metadata(avg_reward=0.25, std_reward=0.1, pass_at_k={"1": 0.25})
    results = [record(0, 0, "x", reward=None, error={"category": "infra", "type": "T", "message": "down"})]
    console.print(summary_table(meta, results, "out/run"))
    console.print(samples_table(results))
    text = buf.getvalue()
    assert "mean 0.250, sd 0.100" in text and "pass@1 0.250" in text  # no scored count: no interval
    assert "infra 1: T: down" in text and "out/run" in text


def test_run_paths_and_resume_lookup(tmp_path: Path) -> None:
    assert model_slug("Qwen/Qwen3-4B") == "Qwen--Qwen3-4B"
    assert model_slug("local:/a b/m.gguf") == "local_--a_b--m.gguf"
    base = tmp_path / "evals"
    root = base / "resc--m"
    write_run(root / "done", [record(0, 0, "a0", reward=1.0)])
    assert find_resumable("resc", "m", {}, base) is None  # completed runs are not resumed
    meta = json.loads((root / "done" / "metadata.json").read_text())
    meta["status"] = "cancelled"
    (root / "done" / "metadata.json").write_text(json.dumps(meta))
    found = find_resumable("resc", "m", {}, base)
    assert found is not None and found.path == root / "done"
    assert find_resumable("resc", "m", {"rollouts_per_example": 5}, base) is None
