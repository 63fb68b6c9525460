"""The run engine: exact concurrency, streamed results, metadata, pass@k, resume and cancellation."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.scripted_server import Reply, ScriptedServer
from verifiers.eval import ResumeMismatchError, RunDirectory, pass_at_k
from verifiers.eval.run import METADATA_INTERVAL_S
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
    # Every request waits until the cap's worth is in flight: the cap is reached whatever the machine's speed.
    with ScriptedServer(delay=0.02, hold_after=0) as srv:
        env = make_env(12)
        progress = vf.RunProgress()
        running = asyncio.create_task(
            env.a_evaluate(
                srv.url, "m", rollouts_per_example=r, max_concurrent=concurrency, progress=progress
            )
        )
        await asyncio.to_thread(srv.wait_for_requests, concurrency)
        srv.release()
        run = await running
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


def _wait_for_lines(path: Path, n: int, timeout: float = 300) -> None:
    """Until ``path`` has ``n`` lines (the timeout only guards against a hang)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} lines")


def _job(url: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    """``_eval_job.py``: 40 examples q0..q39, 3 rollouts each, 4 rollouts in flight."""
    return subprocess.Popen(
        [sys.executable, str(JOB), url, str(out), "40", "3", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answer_first(groups: int) -> ScriptedServer:
    """A server that answers the first ``groups`` examples and holds every later one until ``release()``:
    those groups are written and the run is still in flight, however fast or slow the machine. (Slots go
    to groups in order, so the held requests never starve an earlier group.)"""
    return ScriptedServer(handler=lambda body: Reply(hold=int(body["messages"][-1]["content"][1:]) >= groups))


def _check_exactly_once(out: Path, n: int, r: int) -> None:
    records = RunDirectory(out).load_results(repair=False)
    pairs = Counter((rec["example_id"], rec["rollout_index"]) for rec in records)
    assert len(pairs) == n * r, f"missing pairs: {n * r - len(pairs)}"
    assert max(pairs.values()) == 1, "a rollout was written twice"


def test_resume_after_sigkill_runs_every_rollout_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with _answer_first(5) as srv:
        proc = _job(srv.url, out)
        try:
            srv.wait_for_requests(15 + 4)  # five groups answered, then all four slots held
            _wait_for_lines(out / "results.jsonl", 15)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        # Simulate a kill in the middle of a write: a torn last line must be cut off, not kept.
        with open(out / "results.jsonl", "ab") as f:
            f.write(b'{"example_id": 39, "rollout_ind')
        partial = RunMetadata.model_validate_json((out / "metadata.json").read_text())
        assert partial.status == "running"
        done_before = RunDirectory(out).load_results(repair=False)
        assert len(done_before) == 15
        srv.release()
        srv.reset_stats()
        resumed = _job(srv.url, out, "--resume")
        stdout, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr
        assert "STATUS completed 120" in stdout
        # only the missing rollouts were requested again
        assert len(srv.requests) == 120 - len(done_before)
    _check_exactly_once(out, 40, 3)
    meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
    assert meta.status == "completed" and meta.counts.completed == 120 and meta.avg_reward == 1.0


def test_ctrl_c_leaves_a_consistent_resumable_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with _answer_first(3) as srv:
        proc = _job(srv.url, out)
        try:
            srv.wait_for_requests(9 + 4)  # three groups answered, four rollouts in flight
            _wait_for_lines(out / "results.jsonl", 9)
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        assert proc.returncode != 0
        meta = RunMetadata.model_validate_json((out / "metadata.json").read_text())
        assert meta.status == "cancelled"
        data = (out / "results.jsonl").read_bytes()
        assert data.endswith(b"\n")  # no torn line after a clean cancel
        assert meta.counts.completed == data.count(b"\n") == 9  # metadata agrees with the file
        srv.release()
        resumed = _job(srv.url, out, "--resume")
        stdout, stderr = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, stderr
        assert "STATUS completed 120" in stdout
    _check_exactly_once(out, 40, 3)
    assert json.loads((out / "metadata.json").read_text())["status"] == "completed"


def test_metadata_is_rewritten_while_running(tmp_path: Path) -> None:
    out = tmp_path / "run"
    second_group = threading.Event()

    async def handler(body: dict[str, Any]) -> Reply:
        example = int(body["messages"][-1]["content"][1:])
        while example == 1 and not second_group.is_set():  # noqa: ASYNC110 - set from the test thread
            await asyncio.sleep(0.01)
        return Reply(hold=example >= 2)

    with ScriptedServer(handler=handler) as srv:
        proc = _job(srv.url, out)
        try:
            _wait_for_lines(out / "results.jsonl", 3)
            # The rewrite is due once METADATA_INTERVAL_S has passed since the last write (at the latest,
            # the first group's): the second group's records come after that, the run still in flight.
            time.sleep(METADATA_INTERVAL_S)
            second_group.set()
            _wait_for_lines(out / "results.jsonl", 6)
            deadline = time.monotonic() + 300
            while (
                meta := RunMetadata.model_validate_json((out / "metadata.json").read_text())
            ).counts.completed == 0:
                assert time.monotonic() < deadline, "metadata.json was not rewritten while the run ran"
                time.sleep(0.1)
            # Rewritten after the first group (if its records came a second after the first write) or the
            # second: either way mid-run, the held third group still in flight.
            assert meta.counts.completed in (3, 6) and meta.status == "running"
        finally:
            second_group.set()
            proc.kill()
            proc.wait(30)


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
    # The rate is read between these two instants: this run's 2 rollouts over an elapsed time between them.
    before = time.monotonic()
    rate = progress.rate
    after = time.monotonic()
    assert 2 / (after - progress.started) <= rate <= 2 / (before - progress.started)


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
