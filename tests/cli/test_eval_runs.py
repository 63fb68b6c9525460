"""vf-eval and run directories (issue 11, part 2; issue 22): one writer per run directory, a run killed
during start-up leaves nothing behind, and a silent server is a recorded infra error within the request
bound."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from rich.console import Console

from tests.cli._helpers import RULES, Result, assert_one_line_error, clean_env, read_results, run_cli, script
from tests.scripted_server import Rule, ScriptedServer
from verifiers.clients import Client
from verifiers.eval.engine import RunProgress


def vf_eval(work: Path, *args: str, **kw: object) -> Result:
    return run_cli("vf-eval", *args, cwd=work, **kw)  # type: ignore[arg-type]


def _popen(work: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [script("vf-eval"), *args],
        cwd=work,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _scripted_rules(hold_after: int | None = None) -> ScriptedServer:
    """An in-process scripted server answering like ``start_server(RULES)`` (q0, q1 right)."""
    return ScriptedServer(
        rules=[Rule(match=k, content=v) for k, v in RULES.items()], default="wrong", hold_after=hold_after
    )


def test_a_second_vf_eval_on_a_running_directory_fails_naming_the_holder(workdir: Path) -> None:
    out = workdir / "run"
    # The first run's third request is held: it is still running (and holds the directory) until released.
    with _scripted_rules(hold_after=2) as srv:
        first = _popen(
            workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "6", "-r", "3", "-c", "1", "-o", str(out)
        )
        try:
            srv.wait_for_requests(3)
            res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "--resume", str(out))
            assert_one_line_error(res, 2, str(out), "in use by another run", f"pid {first.pid}")
            assert len(srv.requests) == 3  # the refused run sent nothing
        finally:
            srv.release()
            _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in read_results(out))
    assert len(pairs) == 18 and set(pairs.values()) == {1}


def test_a_run_killed_during_start_up_leaves_nothing_and_runs_again(workdir: Path) -> None:
    out = workdir / "run"
    with ScriptedServer(rules=[], default="a0", hold_models=True) as srv:  # the endpoint check hangs
        proc = _popen(workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "3", "-r", "2", "-o", str(out))
        try:
            srv.wait_for_requests(1, models=True)  # the run is in its endpoint check now
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        # The run directory comes at the first rollout, not before the start-up (issue 22).
        assert not out.exists() and not srv.requests
        srv.release()
        res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "3", "-r", "2", "-o", str(out))
        assert res.code == 0, res.stderr
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["completed"] == 6
    assert meta["base_url"] == srv.url


def test_a_silent_server_is_a_recorded_infra_error_within_the_request_bound(workdir: Path) -> None:
    # The server never answers while the run lasts: only the 1 s request bound can end the rollout (the
    # default bounds, 5 minutes and more, would outlast this call's 2-minute guard and fail the test).
    with ScriptedServer(hold_after=0) as srv:
        res = vf_eval(
            workdir,
            "cli-env",
            "-m",
            "m",
            "-b",
            srv.url,
            "-n",
            "1",
            "-r",
            "1",
            "--request-timeout",
            "1",
            "--json",
            "-o",
            str(workdir / "run"),
            timeout=120,
        )
        assert srv.requests, "the rollout never asked the server"
    assert res.code == 1, res.stderr  # every rollout failed, and said so
    (rec,) = read_results(workdir / "run")
    assert rec["error"]["category"] == "infra" and rec["error"]["type"] == "RequestTimeoutError"
    assert "timed out" in rec["error"]["message"] or "total timeout of 1s" in rec["error"]["message"]


def test_help_shows_the_request_bounds() -> None:
    from verifiers.clients import client as mod

    res = run_cli("vf-eval", "--help", cwd=Path.cwd())
    text = " ".join(res.stdout.replace("│", " ").split())
    assert "--request-timeout" in text
    for seconds in (mod.DEFAULT_CONNECT_TIMEOUT, mod.DEFAULT_READ_TIMEOUT, mod.DEFAULT_TOTAL_TIMEOUT):
        assert f"{seconds:g} s" in text, seconds


def test_progress_says_when_requests_wait_on_a_silent_server() -> None:
    from verifiers.cli._display import SLOW_REQUEST_S, ProgressDisplay

    progress = RunProgress()
    progress.client = Client("http://127.0.0.1:9/v1")
    display = ProgressDisplay(Console(width=200), progress, "t", live=False)
    assert "waiting" not in display.plain_line()
    now = time.monotonic()
    progress.client.stats.waiting.update({1: now - SLOW_REQUEST_S - 1, 2: now - SLOW_REQUEST_S - 5, 3: now})
    assert "2 requests waiting > 30 s" in display.plain_line()
    console = Console(width=200, record=True)
    console.print(display.renderable())
    assert "2 requests waiting > 30 s" in console.export_text()
