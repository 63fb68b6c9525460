"""vf-eval and run directories (issue 11, part 2): one writer per run directory, a run killed during
start-up resumes, and a silent server is a recorded infra error within the request bound."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from rich.console import Console

from tests.cli._helpers import RULES, Result, assert_one_line_error, clean_env, read_results, run_cli, script
from tests.scripted_server import Reply, ScriptedServer
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


def _wait_for(path: Path, lines: int = 0, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and (lines == 0 or path.read_text().count("\n") >= lines):
            return True
        time.sleep(0.05)
    return False


def test_a_second_vf_eval_on_a_running_directory_fails_naming_the_holder(workdir: Path, start_server) -> None:
    srv = start_server(RULES, delay=0.3)  # the first run lasts ~5 s: the second starts while it runs
    out = workdir / "run"
    first = _popen(
        workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "6", "-r", "3", "-c", "1", "-o", str(out)
    )
    try:
        assert _wait_for(out / "results.jsonl", 2), "the first run wrote nothing"
        res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "--resume", str(out))
        assert_one_line_error(res, 2, str(out), "in use by another run", f"pid {first.pid}")
    finally:
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in read_results(out))
    assert len(pairs) == 18 and set(pairs.values()) == {1}


def test_a_run_killed_during_start_up_resumes(workdir: Path) -> None:
    out = workdir / "run"
    with ScriptedServer(rules=[], default="a0", models_delay=6) as srv:  # the endpoint check hangs
        proc = _popen(workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "3", "-r", "2", "-o", str(out))
        # metadata.json comes before the endpoint check (and a local model's start), not after it
        written = _wait_for(out / "metadata.json", timeout=4)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert written, "no metadata.json while the run was starting up"
        meta = json.loads((out / "metadata.json").read_text())  # written before the slow start-up
        assert meta["status"] == "running" and meta["counts"]["planned"] == 6
        assert not srv.requests
        srv.models_delay = 0
        res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "--resume", str(out))
        assert res.code == 0, res.stderr
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["completed"] == 6
    assert meta["base_url"] == srv.url


def test_a_silent_server_is_a_recorded_infra_error_within_the_request_bound(workdir: Path) -> None:
    with ScriptedServer(handler=lambda body: Reply(content="a0", delay=3.0)) as srv:
        t0 = time.monotonic()
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
        )
        took = time.monotonic() - t0
    assert res.code == 1, res.stderr  # every rollout failed, and said so
    assert took < 15
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
