"""Distributed evaluation on a real local Ray cluster (issue 17): a head and worker nodes started as
separate ``ray start`` processes; groups spread over both nodes, a worker node killed mid-run has its
groups re-run elsewhere (nothing recorded twice), and a driver killed with SIGKILL resumes exactly once.
Uses the bundled ``tiny-qa`` environment, loaded by id in each actor."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import verifiers as vf
from tests.cli._helpers import clean_env, script
from tests.eval_ray.conftest import RayCluster, descendants
from tests.scripted_server import Reply, ScriptedServer
from verifiers.cli.eval import EXIT_INTERRUPTED

pytestmark = pytest.mark.ray

#: tiny-qa's rows: 8 examples (its default num_examples is 5; the tests ask for all 8).
EXAMPLES = 8


def _answer(body: dict[str, Any], delay: float) -> Reply:
    question = body["messages"][-1]["content"]
    if "France" in question:
        return Reply(content=None, delay=delay)  # an empty reply: a model error, kept with its category
    return Reply(content="Tokyo", delay=delay)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _assert_exactly_once(out: Path, rollouts: int) -> dict[str, Any]:
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in _records(out))
    assert len(pairs) == EXAMPLES * rollouts and set(pairs.values()) == {1}, pairs
    meta: dict[str, Any] = json.loads((out / "metadata.json").read_text())
    assert meta["status"] == "completed"
    assert meta["counts"]["completed"] == EXAMPLES * rollouts
    assert meta["counts"]["errored"] == {"model": rollouts}  # the France question, every rollout
    return meta


def _wait_for_lines(path: Path, n: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return True
        time.sleep(0.05)
    return False


def test_an_eval_spreads_over_both_nodes_and_keeps_error_categories(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    env = vf.load_environment("tiny-qa")
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, 0.2)) as srv:
        run = env.evaluate(
            srv.url,
            "m",
            num_examples=EXAMPLES,
            rollouts_per_example=2,
            max_concurrent=4,
            output_dir=out,
            ray=ray_cluster.address,
        )
        peak = srv.max_in_flight
    meta = _assert_exactly_once(out, 2)
    ray_meta = meta["extra"]["ray"]
    assert ray_meta["actors"] == 2 and ray_meta["nodes"] == 2, ray_meta  # both nodes ran groups
    assert sum(ray_meta["groups_by_node"].values()) == EXAMPLES
    assert peak <= 4  # max_concurrent counts rollouts across the cluster
    assert run.metadata.avg_reward == pytest.approx(1 / 7)  # Tokyo is right once among 7 scored examples
    assert {r["env_id"] for r in run.results} == {"tiny-qa"}


def test_a_worker_node_killed_mid_run_has_its_groups_rerun_once(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    doomed = ray_cluster.add_worker("worker2")
    env = vf.load_environment("tiny-qa")
    out = tmp_path / "run"
    killed = threading.Event()

    def kill_when_running() -> None:
        if _wait_for_lines(out / "results.jsonl", 2):
            RayCluster.kill(doomed)  # its actor holds an in-flight group (round-robin over 3 actors)
            killed.set()

    killer = threading.Thread(target=kill_when_running, daemon=True)
    with ScriptedServer(handler=lambda body: _answer(body, 0.6)) as srv:
        killer.start()
        env.evaluate(
            srv.url,
            "m",
            num_examples=EXAMPLES,
            rollouts_per_example=2,
            max_concurrent=6,
            output_dir=out,
            ray=ray_cluster.address,
        )
    killer.join(5)
    assert killed.is_set(), "the run ended before the worker node was killed"
    meta = _assert_exactly_once(out, 2)
    ray_meta = meta["extra"]["ray"]
    assert ray_meta["actors"] == 3 and ray_meta["actors_lost"] == 1, json.dumps(ray_meta)
    assert ray_meta["requeued_groups"] >= 1  # the dead actor's groups went to the actors left


def _resume(args: list[str], out: Path, cluster: RayCluster, cwd: Path) -> None:
    res = subprocess.run(
        [script("vf-eval"), *args, "--resume", str(out), "--ray", cluster.address],
        env=clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-3000:]


def test_a_driver_killed_with_sigkill_resumes_exactly_once(ray_cluster: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, 0.4)) as srv:
        args = ["tiny-qa", "-m", "m", "-b", srv.url, "-n", str(EXAMPLES), "-r", "2", "-c", "4"]
        proc = subprocess.Popen(
            [script("vf-eval"), *args, "-o", str(out), "--ray", ray_cluster.address],
            env=clean_env(),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            assert _wait_for_lines(out / "results.jsonl", 2), "the driver wrote nothing"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        first = len(_records(out))
        assert first < EXAMPLES * 2, "the run finished before it was killed"
        assert json.loads((out / "metadata.json").read_text())["status"] == "running"
        _resume(args, out, ray_cluster, tmp_path)
    _assert_exactly_once(out, 2)


def _eval_actor_pids(cluster: RayCluster) -> list[int]:
    """This cluster's processes running a ``GroupWorker`` actor (Ray titles them ``ray::GroupWorker…``)."""
    found = []
    for pid in (p for node in cluster.nodes if node.poll() is None for p in descendants(node.pid)):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"GroupWorker" in cmdline:
            found.append(pid)
    return found


def test_ctrl_c_leaves_a_consistent_run_and_resumes_exactly_once(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, 0.6)) as srv:
        args = ["tiny-qa", "-m", "m", "-b", srv.url, "-n", str(EXAMPLES), "-r", "2", "-c", "4"]
        proc = subprocess.Popen(
            [script("vf-eval"), *args, "-o", str(out), "--ray", ray_cluster.address],
            env=clean_env(),
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert _wait_for_lines(out / "results.jsonl", 2), "the driver wrote nothing"
            assert _eval_actor_pids(ray_cluster), (
                "no actor process found (the check below would pass vacuously)"
            )
            proc.send_signal(signal.SIGINT)  # Ctrl-C, with groups in flight on the actors
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        assert proc.returncode == EXIT_INTERRUPTED, err[-3000:]
        assert "Traceback" not in err and "--resume" in err, err[-3000:]
        records = _records(out)  # every line a whole JSON record
        pairs = Counter((r["example_id"], r["rollout_index"]) for r in records)
        assert 0 < len(records) < EXAMPLES * 2, "the run finished before it was interrupted"
        assert set(pairs.values()) == {1}, pairs
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["status"] == "cancelled"
        assert meta["counts"]["completed"] == len(records)
        deadline = time.monotonic() + 15  # the driver killed its actors; their processes exit
        while _eval_actor_pids(ray_cluster) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _eval_actor_pids(ray_cluster), "actors outlived the interrupted driver"
        _resume(args, out, ray_cluster, tmp_path)
    _assert_exactly_once(out, 2)
