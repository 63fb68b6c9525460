"""The run engine: exact concurrency, streamed results, metadata, pass@k, resume and cancellation."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer
from verifiers.eval import ResumeMismatchError, RunDirectory, pass_at_k
from verifiers.types import RolloutResult, RunMetadata

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "core" / "_eval_job.py"


def exact(completion, answer) -> float:
    return float(completion[-1]["content"] == answer)


def make_env(n: int) -> vf.SingleTurnEnv:
    return vf.SingleTurnEnv(
        dataset=[{"question": f"q{i}", "answer": "ok"} for i in range(n)],
        rubric=vf.Rubric([exact]),
        env_id="t",
    )


@pytest.mark.parametrize(("concurrency", "r"), [(1, 1), (5, 3), (16, 4)])
async def test_max_concurrent_is_honoured_exactly(concurrency: int, r: int) -> None:
    with ScriptedServer(delay=0.02) as srv:
        env = make_env(12)
        progress = vf.RunProgress()
        run = await env.a_evaluate(
            srv.url, "m", rollouts_per_example=r, max_concurrent=concurrency, progress=progress
        )
    assert run.metadata.counts.completed == 12 * r
    assert srv.max_in_flight == concurrency  # reached, never exceeded, seen by the server
    assert progress.max_in_flight == concurrency


async def test_results_and_metadata_files(tmp_path: Path, scripted: ScriptedServer) -> None:
    # Alternate right and wrong answers by example so pass@k has something to estimate.
    scripted.handler = lambda body: Reply(
        content="ok" if int(body["messages"][-1]["content"][1:]) % 2 else "no"
    )
    env = make_env(6)
    out = tmp_path / "run"
    run = await env.a_evaluate(scripted.url, "m", rollouts_per_example=4, max_concurrent=8, output_dir=out)
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 24
    for line in lines:
        RolloutResult.model_validate_json(line)
    meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
    assert meta.status == "completed" and meta.finished_at is not None
    assert meta.counts.planned == meta.counts.completed == 24
    assert meta.avg_reward == pytest.approx(0.5)
    assert meta.pass_at_k == {"1": pytest.approx(0.5), "2": pytest.approx(0.5), "4": pytest.approx(0.5)}
    assert meta.usage.prompt_tokens == 240
    assert meta.env_id == "t" and meta.model == "m" and meta.base_url == scripted.url
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in run.results)
    assert set(pairs.values()) == {1} and len(pairs) == 24


async def test_errored_rollouts_are_kept_and_excluded_from_averages(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    scripted.handler = lambda body: (
        Reply(content=None) if body["messages"][-1]["content"] == "q0" else Reply(content="ok")
    )
    run = await make_env(3).a_evaluate(scripted.url, "m", output_dir=tmp_path / "r")
    assert run.metadata.counts.completed == 3
    assert run.metadata.counts.errored == {"model": 1}
    assert run.metadata.avg_reward == 1.0  # over the two scored rollouts, not dragged down by a fake 0
    assert run.results[0]["error"]["type"] == "EmptyResponseError" and run.results[0]["reward"] is None


def test_pass_at_k_unbiased_estimator() -> None:
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 2) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - (3 * 2) / (4 * 3))  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


async def test_per_rollout_scoring_mode(scripted: ScriptedServer) -> None:
    @vf.group_reward
    def group_size(states) -> list[float]:
        return [float(len(states))] * len(states)

    env = vf.SingleTurnEnv(dataset=[{"question": "q", "answer": "ok"}], rubric=vf.Rubric([group_size]))
    per_group = await env.a_generate(env.select_rows(), scripted.url, "m", rollouts_per_example=3)
    per_rollout = await env.a_generate(
        env.select_rows(), scripted.url, "m", rollouts_per_example=3, score="rollout"
    )
    assert [s["reward"] for s in per_group] == [3.0, 3.0, 3.0]
    assert [s["reward"] for s in per_rollout] == [1.0, 1.0, 1.0]


async def test_refuses_to_overwrite_and_checks_resume_settings(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    out = tmp_path / "run"
    env = make_env(2)
    await env.a_evaluate(scripted.url, "m", output_dir=out)
    with pytest.raises(FileExistsError, match="resume"):
        await env.a_evaluate(scripted.url, "m", output_dir=out)
    with pytest.raises(ResumeMismatchError, match="model"):
        await env.a_evaluate(scripted.url, "other-model", output_dir=out, resume=True)
    with pytest.raises(ResumeMismatchError, match="rollouts_per_example"):
        await env.a_evaluate(scripted.url, "m", output_dir=out, resume=True, rollouts_per_example=2)
    # resuming a complete run is a no-op
    before = (out / "results.jsonl").read_bytes()
    run = await env.a_evaluate(scripted.url, "m", output_dir=out, resume=True)
    assert (out / "results.jsonl").read_bytes() == before and run.metadata.counts.completed == 2


def _wait_for_lines(path: Path, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} lines")


def _job(url: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(JOB), url, str(out), "40", "3", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_exactly_once(out: Path, n: int, r: int) -> None:
    records = RunDirectory(out).load_results(repair=False)
    pairs = Counter((rec["example_id"], rec["rollout_index"]) for rec in records)
    assert len(pairs) == n * r, f"missing pairs: {n * r - len(pairs)}"
    assert max(pairs.values()) == 1, "a rollout was written twice"


def test_resume_after_sigkill_runs_every_rollout_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(delay=0.03) as srv:
        proc = _job(srv.url, out)
        _wait_for_lines(out / "results.jsonl", 15)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # Simulate a kill in the middle of a write: a torn last line must be cut off, not kept.
        with open(out / "results.jsonl", "ab") as f:
            f.write(b'{"example_id": 39, "rollout_ind')
        partial = RunMetadata.model_validate_json((out / "metadata.json").read_text())
        assert partial.status == "running"
        done_before = RunDirectory(out).load_results(repair=False)
        assert 15 <= len(done_before) < 120
        srv.reset_stats()
        resumed = _job(srv.url, out, "--resume")
        stdout, stderr = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, stderr
        assert "STATUS completed 120" in stdout
        # only the missing rollouts were requested again
        assert len(srv.requests) == 120 - len(done_before)
    _check_exactly_once(out, 40, 3)
    meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
    assert meta.status == "completed" and meta.counts.completed == 120 and meta.avg_reward == 1.0


def test_ctrl_c_leaves_a_consistent_resumable_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(delay=0.03) as srv:
        proc = _job(srv.url, out)
        _wait_for_lines(out / "results.jsonl", 9)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert proc.returncode != 0
        meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
        assert meta.status == "cancelled"
        data = (out / "results.jsonl").read_bytes()
        assert data.endswith(b"\n")  # no torn line after a clean cancel
        assert meta.counts.completed == data.count(b"\n")  # metadata agrees with the file
        resumed = _job(srv.url, out, "--resume")
        stdout, stderr = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, stderr
        assert "STATUS completed 120" in stdout
    _check_exactly_once(out, 40, 3)
    assert json.loads((out / "metadata.json").read_text())["status"] == "completed"


def test_metadata_is_rewritten_while_running(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(delay=0.05) as srv:
        proc = _job(srv.url, out)
        try:
            _wait_for_lines(out / "results.jsonl", 3)
            deadline = time.monotonic() + 10
            seen = 0
            while time.monotonic() < deadline and seen == 0:
                meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
                seen = meta.counts.completed
                time.sleep(0.1)
            assert seen > 0 and meta.status == "running"
        finally:
            proc.kill()
            proc.wait()


async def test_progress_rate_counts_only_this_runs_rollouts(tmp_path: Path, scripted: ScriptedServer) -> None:
    env = make_env(4)
    out = tmp_path / "run"
    await env.a_evaluate(scripted.url, "m", num_examples=2, output_dir=out)
    # pretend the first run covered only 2 of 4 examples: resume the same plan with more examples
    meta = json.loads((out / "metadata.json").read_text())
    meta["num_examples"] = 4
    meta["status"] = "cancelled"
    (out / "metadata.json").write_text(json.dumps(meta))
    progress = vf.RunProgress()
    await env.a_evaluate(scripted.url, "m", num_examples=4, output_dir=out, resume=True, progress=progress)
    assert (progress.done, progress.total, progress.preloaded) == (4, 4, 2)
    elapsed = time.monotonic() - progress.started
    assert progress.rate == pytest.approx(2 / elapsed, rel=0.2)


async def test_rescore_records_a_failing_rubric_instead_of_crashing(
    tmp_path: Path, scripted: ScriptedServer
) -> None:
    from verifiers.eval.rescore import rescore_run

    env = make_env(3)
    out = tmp_path / "run"
    await env.a_evaluate(scripted.url, "m", rollouts_per_example=2, output_dir=out)

    class Broken(vf.Rubric):
        async def score_group(self, states) -> None:
            raise RuntimeError("rubric crashed")

    env.rubric = Broken()
    result = await rescore_run(env, out, output_dir=tmp_path / "again")
    assert result.rescored == 6 and result.metadata.counts.errored == {"env": 6}
    assert all(r["reward"] is None and "rubric crashed" in r["error"]["message"] for r in result.results)
    assert result.metadata.avg_reward is None
