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


#: tiny-qa's first two questions: the tests that interrupt a run answer these and hold the rest.
FIRST_TWO = ("France", "Japan")


def _answer(body: dict[str, Any], delay: float = 0.0, *, hold_after_first_two: bool = False) -> Reply:
    """Tokyo to everything, and an empty reply (a model error, kept with its category) about France.
    ``hold_after_first_two``: every question after the first two examples waits for ``release()``, so
    those two groups are written (their slots come first) and the run is still in flight."""
    question = body["messages"][-1]["content"]
    hold = hold_after_first_two and not any(word in question for word in FIRST_TWO)
    if "France" in question:
        return Reply(content=None, delay=delay, hold=hold)
    return Reply(content="Tokyo", delay=delay, hold=hold)


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


def _wait_for_requests(srv: ScriptedServer, proc: subprocess.Popen[str], n: int, log: Path) -> None:
    """Until the server got ``n`` completion requests from the ``vf-eval`` in ``proc``, which must stay
    alive meanwhile (its stderr, in ``log``, says why not). The timeout only guards against a hang."""
    deadline = time.monotonic() + 300
    while len(srv.requests) < n:
        if proc.poll() is not None:
            pytest.fail(
                f"vf-eval exited ({proc.returncode}) after {len(srv.requests)} of {n} requests:\n"
                + log.read_text(errors="replace")[-3000:]
            )
        assert time.monotonic() < deadline, f"{len(srv.requests)} of {n} requests:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)


def _start_two_groups_in(
    srv: ScriptedServer, args: list[str], out: Path, cluster: RayCluster, cwd: Path
) -> tuple[subprocess.Popen[str], Path]:
    """``vf-eval ARGS -o OUT --ray CLUSTER`` in the background, once its first two groups are written and
    two more are held in flight (the server holds all but the first two questions); its stderr in the log."""
    log = cwd / "vf-eval.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [script("vf-eval"), *args, "-o", str(out), "--ray", cluster.address],
            env=clean_env(),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
    try:
        _wait_for_requests(srv, proc, 4 + 4, log)
        _wait_for_lines(out / "results.jsonl", 4)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    return proc, log


def _wait_for_lines(path: Path, n: int, timeout: float = 300) -> None:
    """Until ``path`` has ``n`` lines (the timeout only guards against a hang)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_bytes().count(b"\n") >= n):
        assert time.monotonic() < deadline, f"{path} never reached {n} lines"
        time.sleep(0.05)


def _evaluate(
    env: vf.Environment, srv: ScriptedServer, out: Path, cluster: RayCluster, *, max_concurrent: int
) -> vf.EvalRun:
    """All of tiny-qa, two rollouts each, against ``srv`` on ``cluster``, written to ``out``."""
    return env.evaluate(
        srv.url,
        "m",
        num_examples=EXAMPLES,
        rollouts_per_example=2,
        max_concurrent=max_concurrent,
        output_dir=out,
        ray=cluster.address,
    )


def test_an_eval_spreads_over_both_nodes_and_keeps_error_categories(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    env = vf.load_environment("tiny-qa")
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, 0.2)) as srv:
        run = _evaluate(env, srv, out, ray_cluster, max_concurrent=4)
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
    killed: list[BaseException | None] = []

    def kill_when_running() -> None:
        try:
            # Nothing is answered until the node is dead: 6 requests in flight are three groups, one on
            # each of the three actors (each group goes to the least-loaded actor).
            srv.wait_for_requests(6)
            RayCluster.kill(doomed)
            killed.append(None)
        except BaseException as exc:
            killed.append(exc)
        finally:
            srv.release()

    killer = threading.Thread(target=kill_when_running, daemon=True)
    with ScriptedServer(handler=_answer, hold_after=0) as srv:
        killer.start()
        _evaluate(env, srv, out, ray_cluster, max_concurrent=6)
    killer.join(300)
    assert killed == [None], killed
    meta = _assert_exactly_once(out, 2)
    ray_meta = meta["extra"]["ray"]
    assert ray_meta["actors"] == 3 and ray_meta["actors_lost"] == 1, json.dumps(ray_meta)
    assert ray_meta["requeued_groups"] >= 1  # the dead actor's groups went to the actors left
    _wait_until_gone(ray_cluster, "worker2")  # the tests after this one start on a settled cluster


def _wait_until_gone(cluster: RayCluster, resource: str) -> None:
    deadline = time.monotonic() + 300  # a guard against a hang, not a speed requirement
    while resource in cluster.alive_resources():
        assert time.monotonic() < deadline, f"the cluster still lists the node offering {resource} as alive"
        time.sleep(0.5)


def test_a_node_that_died_just_before_the_run_is_left_out(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """A node killed a moment before the run is still listed alive (its death is noticed by missed health
    checks): the actor placed on it never starts; the run goes on on the nodes that live."""
    doomed = ray_cluster.add_worker("worker3")
    RayCluster.kill(doomed)
    env = vf.load_environment("tiny-qa")
    out = tmp_path / "run"
    with ScriptedServer(handler=_answer) as srv:
        _evaluate(env, srv, out, ray_cluster, max_concurrent=4)
    ray_meta = _assert_exactly_once(out, 2)["extra"]["ray"]
    assert ray_meta["actors"] - ray_meta["actors_lost"] == 2, ray_meta  # the head's and worker1's
    assert ray_meta["nodes"] == 2, ray_meta
    _wait_until_gone(ray_cluster, "worker3")


def _resume(args: list[str], out: Path, cluster: RayCluster, cwd: Path) -> None:
    res = subprocess.run(
        [script("vf-eval"), *args, "--resume", str(out), "--ray", cluster.address],
        env=clean_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]


def test_a_driver_killed_with_sigkill_resumes_exactly_once(ray_cluster: RayCluster, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ScriptedServer(handler=lambda body: _answer(body, hold_after_first_two=True)) as srv:
        args = ["tiny-qa", "-m", "m", "-b", srv.url, "-n", str(EXAMPLES), "-r", "2", "-c", "4"]
        proc, _ = _start_two_groups_in(srv, args, out, ray_cluster, tmp_path)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert len(_records(out)) == 4  # the first two groups; nothing else was answered
        assert json.loads((out / "metadata.json").read_text())["status"] == "running"
        srv.release()
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
    with ScriptedServer(handler=lambda body: _answer(body, hold_after_first_two=True)) as srv:
        args = ["tiny-qa", "-m", "m", "-b", srv.url, "-n", str(EXAMPLES), "-r", "2", "-c", "4"]
        proc, log = _start_two_groups_in(srv, args, out, ray_cluster, tmp_path)
        try:
            assert _eval_actor_pids(ray_cluster), (
                "no actor process found (the check below would pass vacuously)"
            )
            proc.send_signal(signal.SIGINT)  # Ctrl-C, with groups in flight on the actors
            proc.wait(timeout=600)
            err = log.read_text(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
        assert proc.returncode == EXIT_INTERRUPTED, err[-3000:]
        assert "Traceback" not in err and "--resume" in err, err[-3000:]
        records = _records(out)  # every line a whole JSON record
        pairs = Counter((r["example_id"], r["rollout_index"]) for r in records)
        assert len(records) == 4, "only the first two groups were answered"
        assert set(pairs.values()) == {1}, pairs
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["status"] == "cancelled"
        assert meta["counts"]["completed"] == len(records)
        deadline = time.monotonic() + 300  # the driver killed its actors; their processes exit
        while _eval_actor_pids(ray_cluster) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _eval_actor_pids(ray_cluster), "actors outlived the interrupted driver"
        srv.release()
        _resume(args, out, ray_cluster, tmp_path)
    _assert_exactly_once(out, 2)
