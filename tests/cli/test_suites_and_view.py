"""Suites and the local viewer from vf-eval (issue 22): one local model for a whole suite, a closing table
across entries, rules of bounded width when the output is not a terminal; `vf-eval view RUN_DIR` and
`vf-eval … --view` serve the hub's pages for a run (vf-view)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.cli._helpers import RULES, clean_env, run_cli, run_dirs, script
from verifiers.clients.local_model import free_port


def _log_env() -> dict[str, str]:
    """A pipe, as in a CI log: no terminal and no COLUMNS (the case that printed 10,000-character rules)."""
    env = clean_env()
    env.pop("COLUMNS", None)
    return env


def test_a_suite_ends_with_a_table_and_its_rules_are_bounded_off_terminal(
    workdir: Path, start_server
) -> None:
    srv = start_server(RULES)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    suite = workdir / "suite.toml"
    suite.write_text(
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "one"\nbase_url = "{srv.url}"\nnum_examples = 2\n'
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "two"\nbase_url = "{srv.url}"\nrollouts_per_example = 1\n'
        f'[[eval]]\nenv_id = "cli-env"\nmodel = "three"\nbase_url = "{dead}"\n'
    )
    res = run_cli("vf-eval", "@", str(suite), cwd=workdir, env=_log_env())
    assert res.code == 1, res.stderr  # the third cannot reach its endpoint
    assert "1 of 3 evaluations failed" in res.stderr
    lines = res.stdout.splitlines()
    rules = [line for line in lines if "[[eval]] #" in line and "─" in line]
    assert len(rules) == 3 and all(len(line) <= 100 for line in rules), res.stdout[:3000]
    assert max(len(line) for line in lines) < 1000  # nothing runs off to the unbounded console width
    table = res.stdout[res.stdout.index("Suite: 3 evaluations") :]
    one, two = sorted(run_dirs(workdir), key=lambda p: p.parent.name)
    rows = [line for line in table.splitlines() if re.match(r"^[│|]\s+[123]\s", line)]
    assert len(rows) == 3, table
    assert "cli-env 0.3.0" in rows[0] and "one" in rows[0] and "completed" in rows[0]
    assert "2 × 2 (4 scored)" in rows[0]  # 2 examples x 2 rollouts (the package default)
    assert "two" in rows[1] and "4 × 1 (4 scored)" in rows[1]
    assert "three" in rows[2] and "failed" in rows[2] and "cannot reach" in table
    assert str(one.relative_to(workdir)) in rows[0] and str(two.relative_to(workdir)) in rows[1]
    meta = json.loads((one / "metadata.json").read_text())
    # the benchmark table's numbers, in percent: avg@k with its 95% interval, pass@k
    assert f"avg@2 {100 * meta['avg_reward']:.1f}" in rows[0]
    assert f"pass@2 {100 * meta['pass_at_k']['2']:.1f}" in rows[0]


def test_a_suite_starts_the_local_model_once(workdir: Path, smollm: None) -> None:
    suite = workdir / "suite.toml"
    entry = (
        '[[eval]]\nenv_id = "cli-env"\nmodel = "local/smollm2"\nnum_examples = 1\nrollouts_per_example = 1\n'
    )
    suite.write_text(entry + entry + "[eval.env_args]\nsize = 2\n")
    res = run_cli("vf-eval", "@", str(suite), "-t", "4", cwd=workdir, env=_log_env(), timeout=900)
    assert res.code == 0, res.stdout[-2000:] + res.stderr
    assert res.stdout.count("starting the local model local/smollm2") == 1, res.stdout
    assert res.stdout.count("local model server ready") == 1
    assert len(run_dirs(workdir)) == 2
    urls = {json.loads((d / "metadata.json").read_text())["base_url"] for d in run_dirs(workdir)}
    assert len(urls) == 1  # both entries went to the one server


def _serving_url(proc: subprocess.Popen[str], deadline_s: float = 300) -> str:
    """The URL vf-view announces on stderr once it listens (the deadline only guards a hang)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + deadline_s
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"serving .* at (http://127\.0\.0\.1:\d+/)", line)
        if found:
            return found.group(1)
    raise AssertionError("vf-view never said where it serves: " + "".join(seen))


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_vf_eval_view_serves_a_run_directory(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    assert run_cli("vf-eval", "cli-env", "-m", "m", "-b", srv.url, "-n", "2", cwd=workdir).code == 0
    (run_dir,) = run_dirs(workdir)
    proc = subprocess.Popen(
        [script("vf-eval"), "view", str(run_dir), "--port", "0", "--no-open"],
        cwd=workdir,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _serving_url(proc)
        page = httpx.get(url, timeout=60, follow_redirects=True)
        assert page.status_code == 200 and "cli-env" in page.text
    finally:
        _stop(proc)
    # Its errors are vf-view's own, one line.
    res = run_cli("vf-eval", "view", str(workdir / "nope"), "--no-open", cwd=workdir)
    assert res.code == 2 and "not a run directory" in res.stderr and "Traceback" not in res.stderr


def test_vf_eval_view_after_a_run(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    env = {**clean_env(), "BROWSER": "true"}  # the page "opens" in a browser that does nothing
    proc = subprocess.Popen(
        [script("vf-eval"), "cli-env", "-m", "m", "-b", srv.url, "-n", "2", "--view"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _serving_url(proc)
        assert len(run_dirs(workdir)) == 1  # the run is done: its pages are served
        page = httpx.get(url, timeout=60, follow_redirects=True)
        assert page.status_code == 200 and "cli-env" in page.text
    finally:
        code = _stop(proc)
    assert code in (0, 130), code
    res = run_cli("vf-eval", "cli-env", "-b", srv.url, "--view", "--no-save", cwd=workdir)
    assert res.code == 2 and "--view needs the saved run directory" in res.stderr
