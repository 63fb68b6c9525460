"""vf-eval end to end: the real console script in a subprocess against scripted OpenAI-compatible servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from tests.cli._helpers import (
    RULES,
    Result,
    assert_one_line_error,
    clean_env,
    read_results,
    run_cli,
    run_dirs,
    script,
)
from tests.scripted_server import Reply, Rule, ScriptedServer
from verifiers.clients.local_model import free_port


def vf_eval(work: Path, *args: str, **kw: object) -> Result:
    return run_cli("vf-eval", *args, cwd=work, **kw)  # type: ignore[arg-type]


def only_run(work: Path) -> Path:
    dirs = run_dirs(work)
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_defaults_come_from_the_package_pyproject(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    res = vf_eval(workdir, "cli-env", "-m", "my/model", "-b", srv.url)
    assert res.code == 0, res.stderr
    run = only_run(workdir)
    # ./outputs/evals/<env_id>--<model with / replaced>/<timestamp-uuid8>/
    assert run.parent.name == "cli-env--my--model"
    meta = json.loads((run / "metadata.json").read_text())
    assert (meta["num_examples"], meta["rollouts_per_example"]) == (4, 2)
    assert meta["sampling_args"] == {"temperature": 0.25, "max_tokens": 7}
    assert meta["env_version"] == "0.3.0"
    assert meta["status"] == "completed"
    assert meta["avg_reward"] == 0.5  # q0, q1 right of q0..q3
    assert len(read_results(run)) == 8
    # Summary and samples on stdout; stdout is not a terminal, so progress is plain lines.
    assert "reward" in res.stdout and "0.500" in res.stdout
    assert "Sample rollouts" in res.stdout
    assert "cli-env · my/model: 8/8 rollouts" in res.stdout
    assert str(run.relative_to(workdir)) in res.stdout


def test_flags_override_defaults_and_reach_the_server(workdir: Path) -> None:
    with ScriptedServer(default="wrong") as srv:
        res = vf_eval(
            workdir,
            "cli-env",
            "-m",
            "m",
            "-b",
            srv.url,
            "-n",
            "3",
            "-r",
            "3",
            "-c",
            "2",
            "-t",
            "11",
            "-T",
            "0.9",
            "-S",
            '{"top_p": 0.5, "max_tokens": 13}',
            "-a",
            '{"size": 5, "system_prompt": "be terse"}',
            "--shuffle",
            "--seed",
            "3",
        )
        assert res.code == 0, res.stderr
        assert len(srv.requests) == 9
        assert srv.max_in_flight <= 2
        for body in srv.requests:
            # -S overrides -t; -T kept; the system prompt came through -a.
            assert (body["max_tokens"], body["temperature"], body["top_p"]) == (13, 0.9, 0.5)
            assert body["messages"][0] == {"role": "system", "content": "be terse"}
    meta = json.loads((only_run(workdir) / "metadata.json").read_text())
    assert meta["env_args"] == {"size": 5, "system_prompt": "be terse"}
    assert (meta["seed"], meta["shuffle"], meta["num_examples"]) == (3, True, 3)


def test_all_examples_and_json_summary(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "-1", "-r", "1", "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)  # stdout holds only the JSON document
    assert data["failed"] is False
    meta = data["metadata"]
    assert meta["num_examples"] == 6
    assert abs(meta["avg_reward"] - 2 / 6) < 1e-9
    assert meta["pass_at_k"] == {"1": meta["avg_reward"]}
    assert Path(workdir / data["output_dir"]).is_dir()
    assert "rollouts" in res.stderr  # progress went to stderr


def test_no_save_writes_nothing(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    res = vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "--no-save", "-n", "2", "-r", "1")
    assert res.code == 0, res.stderr
    assert run_dirs(workdir) == []
    assert "not saved" in res.stdout


def test_timeout_is_a_recorded_infra_error_and_x_is_gone(workdir: Path) -> None:
    # A rollout slower than --timeout is recorded as an infra error, not dropped.
    with ScriptedServer(handler=lambda body: Reply(content="a0", delay=1.0)) as srv:
        res = vf_eval(
            workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "1", "-r", "1", "--timeout", "0.2", "--json"
        )
    assert res.code == 1  # every rollout failed
    rec = read_results(only_run(workdir))[0]
    assert rec["error"]["type"] == "RolloutTimeoutError"
    # -x set attributes on a built environment; it is gone, and says what replaces it.
    res = vf_eval(workdir, "cli-env", "-m", "m", "-b", "http://127.0.0.1:9/v1", "-x", '{"task": "renamed"}')
    assert_one_line_error(res, 2, "-x/--extra-env-kwargs was removed", "-a/--env-args", "--timeout")


def test_registry_alias_with_replicas(workdir: Path) -> None:
    with ScriptedServer(default="from-a") as a, ScriptedServer(default="from-b") as b:
        registry = workdir / "endpoints.toml"
        registry.write_text(
            f"""
[[fast]]
model = "real/model-name"
url = "{a.url}"
key = "VF_TEST_KEY"

[[fast]]
model = "real/model-name"
url = "{b.url}"
key = "VF_TEST_KEY"
"""
        )
        res = vf_eval(
            workdir,
            "cli-env",
            "-m",
            "fast",
            "-e",
            str(registry),
            "-n",
            "6",
            "-r",
            "2",
            env=clean_env(VF_TEST_KEY="sekrit"),
        )
        assert res.code == 0, res.stderr
        # Both replicas served requests (round-robin per group), with the registry's model name and key.
        assert a.requests and b.requests
        assert len(a.requests) + len(b.requests) == 12
        assert {r["model"] for r in a.requests + b.requests} == {"real/model-name"}
    run = only_run(workdir)
    assert run.parent.name == "cli-env--fast"
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["model"] == "fast" and meta["base_url"] == [a.url, b.url]
    # Rollouts of one group go to one replica: its completions all come from one server.
    by_example: dict[int, set[str]] = {}
    for rec in read_results(run):
        by_example.setdefault(rec["example_id"], set()).add(rec["completion"][-1]["content"])
    assert all(len(v) == 1 for v in by_example.values())
    assert set().union(*by_example.values()) == {"from-a", "from-b"}


def test_registry_key_variable_unset_is_an_error(workdir: Path) -> None:
    registry = workdir / "endpoints.toml"
    registry.write_text('[fast]\nurl = "http://127.0.0.1:9/v1"\nkey = "VF_TEST_KEY"\n')
    res = vf_eval(workdir, "cli-env", "-m", "fast", "-e", str(registry))
    assert_one_line_error(res, 2, "VF_TEST_KEY", "not set")


def test_default_registry_file_is_used(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    (workdir / "configs").mkdir()
    (workdir / "configs" / "endpoints.toml").write_text(f'[small]\nmodel = "x"\nurl = "{srv.url}"\n')
    res = vf_eval(workdir, "cli-env", "-m", "small", "-n", "1", "-r", "1")
    assert res.code == 0, res.stderr


# --- bad input: one line, no traceback -------------------------------------------------------------
def test_unknown_environment_lists_what_exists(workdir: Path) -> None:
    res = vf_eval(workdir, "no-such-env", "-b", "http://127.0.0.1:9/v1")
    line = assert_one_line_error(res, 2, "no-such-env", "installed:")
    assert "cli-env" in line  # the local one under ./environments


def test_malformed_json_options(workdir: Path) -> None:
    for flag in ("-a", "-S"):
        res = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", flag, "{not json")
        assert_one_line_error(res, 2, flag, "not valid JSON")
    res = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-a", "[1, 2]")
    assert_one_line_error(res, 2, "-a/--env-args", "JSON object")


def test_bad_env_args(workdir: Path) -> None:
    res = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-a", '{"bogus": 1}')
    assert_one_line_error(res, 2, "bogus", "accepts")


def test_missing_api_key_variable(workdir: Path) -> None:
    res = vf_eval(workdir, "cli-env", "-b", "http://127.0.0.1:9/v1", "-k", "VF_TEST_KEY")
    assert_one_line_error(res, 2, "VF_TEST_KEY", "not set")


def test_unreachable_url_fails_fast(workdir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    res = vf_eval(workdir, "cli-env", "-m", "some-model", "-b", url)
    # "cannot reach" is the endpoint check's verdict (one probe and one retry), before any rollout runs.
    line = assert_one_line_error(res, 1, "cannot reach", url)
    for hint in ("URL", "OPENAI_API_KEY", "some-model"):
        assert hint in line
    assert not [d for d in run_dirs(workdir) if (d / "results.jsonl").is_file() and read_results(d)]


def test_every_rollout_failing_exits_nonzero(workdir: Path) -> None:
    with ScriptedServer(handler=lambda body: Reply(status=404, error_message="model not found")) as srv:
        res = vf_eval(workdir, "cli-env", "-m", "nope", "-b", srv.url, "-n", "2", "-r", "1")
    line = assert_one_line_error(res, 1, "every rollout failed", "model 2")
    assert "nope" in line and srv.url in line
    assert "errors" in res.stdout and "BadRequestError" in res.stdout  # the summary still shows them


def test_resume_of_another_model_is_refused(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    assert vf_eval(workdir, "cli-env", "-m", "m1", "-b", srv.url, "-n", "2", "-r", "1").code == 0
    run = only_run(workdir)
    res = vf_eval(workdir, "cli-env", "-m", "m2", "-b", srv.url, "--resume", str(run))
    assert_one_line_error(res, 2, "cannot resume", "m1")
    # Same model, different plan: the library's ResumeMismatchError, on one line.
    res = vf_eval(workdir, "cli-env", "-m", "m1", "-b", srv.url, "-r", "3", "--resume", str(run))
    assert_one_line_error(res, 2, "cannot resume", "rollouts_per_example")
    res = vf_eval(workdir, "cli-env", "-m", "m1", "-b", srv.url, "--resume", str(workdir / "nowhere/x"))
    assert_one_line_error(res, 2, "nothing to resume")


def _answer_q0_hold_the_rest(body: dict) -> Reply:
    """RULES' answers; every example but q0 is held: q0's group is the only one written until release()."""
    question = body["messages"][-1]["content"]
    return Reply(content=RULES.get(question, "wrong"), hold=question != "q0")


def test_resume_after_sigkill_completes_every_pair_once(workdir: Path) -> None:
    with ScriptedServer(handler=_answer_q0_hold_the_rest) as srv:
        args = ["cli-env", "-m", "m", "-b", srv.url, "-n", "6", "-r", "3", "-c", "2"]
        proc = subprocess.Popen(
            [script("vf-eval"), *args],
            cwd=workdir,
            env=clean_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            srv.wait_for_requests(5)  # q0's three, then both slots held on the next example
            [results] = list((workdir / "outputs").rglob("results.jsonl"))
            _wait_for_lines(results, 3)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        assert len(read_results(results.parent)) == 3  # q0's group: nothing else was answered
        srv.release()
        # Bare --resume finds the newest incomplete run of this env and model under ./outputs/evals, however
        # the id is spelled (cli_env normalizes to cli-env).
        res = vf_eval(workdir, "cli_env", "-m", "m", "-b", srv.url, "--resume")
    assert res.code == 0, res.stderr
    assert only_run(workdir) == results.parent
    records = read_results(results.parent)
    pairs = Counter((r["example_id"], r["rollout_index"]) for r in records)
    assert set(pairs) == {(e, i) for e in range(6) for i in range(3)}
    assert set(pairs.values()) == {1}
    meta = json.loads((results.parent / "metadata.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["completed"] == 18


def _wait_for_lines(path: Path, n: int, timeout: float = 300) -> None:
    """Until ``path`` has ``n`` lines (the timeout only guards against a hang)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_bytes().count(b"\n") >= n):
        assert time.monotonic() < deadline, f"{path} never reached {n} lines"
        time.sleep(0.05)


def test_sigterm_marks_run_cancelled_and_resume_hint(workdir: Path) -> None:
    with ScriptedServer(
        rules=[Rule(match=k, content=v) for k, v in RULES.items()], default="wrong", hold_after=2
    ) as srv:
        proc = subprocess.Popen(
            [script("vf-eval"), "cli-env", "-m", "m", "-b", srv.url, "-n", "6", "-r", "2", "-c", "1"],
            cwd=workdir,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            srv.wait_for_requests(3)  # the first group is written, the next request is held: mid-run
            _wait_for_lines(only_run(workdir) / "results.jsonl", 2)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "--resume" in err
    meta = json.loads((only_run(workdir) / "metadata.json").read_text())
    assert meta["status"] == "cancelled"
    assert meta["counts"]["completed"] == 2  # the first group; the held request was never recorded


def test_rescore_with_a_fixed_rubric(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    assert vf_eval(workdir, "cli-env", "-m", "m", "-b", srv.url, "-n", "-1", "-r", "1").code == 0
    run = only_run(workdir)
    original = (run / "results.jsonl").read_bytes()
    # "Fix" the rubric: accept any reply. Re-scoring must not call the model (the server is gone).
    module = workdir / "environments" / "cli_env" / "cli_env" / "__init__.py"
    module.write_text(module.read_text().replace("return 1.0 if", "return 1.0  # accept all; was: 1.0 if"))
    srv.proc.terminate()
    res = vf_eval(workdir, "--rescore", str(run), "--json")
    assert res.code == 0, res.stderr
    data = json.loads(res.stdout)
    assert abs(data["old_avg_reward"] - 2 / 6) < 1e-9
    assert data["new_avg_reward"] == 1.0
    assert data["changed"] == 4 and data["rescored"] == 6
    new_dir = Path(data["output_dir"])
    assert new_dir.is_dir() and new_dir != run
    assert (run / "results.jsonl").read_bytes() == original  # the original run is untouched
    new_meta = json.loads((new_dir / "metadata.json").read_text())
    assert new_meta["extra"]["rescored_from"]["path"] == str(run)
    assert {r["reward"] for r in read_results(new_dir)} == {1.0}
    # The human form prints old → new.
    res = vf_eval(workdir, "--rescore", str(run), "-o", str(workdir / "rescored2"))
    assert res.code == 0, res.stderr
    assert "0.333 → 1.000" in res.stdout
    res = vf_eval(workdir, "--rescore", str(workdir / "not-a-run"))
    assert_one_line_error(res, 2, "--rescore", "not a run directory")


def test_help_lists_every_flag() -> None:
    res = run_cli("vf-eval", "--help", cwd=Path.cwd())
    assert res.code == 0
    for flag in (
        "-m, --model",
        "-b, --api-base-url",
        "-k, --api-key-var",
        "-n, --num-examples",
        "-r, --rollouts-per-example",
        "-c, --max-concurrent",
        "-t, --max-tokens",
        "-T, --temperature",
        "-S, --sampling-args",
        "-a, --env-args",
        "--dry-run",
        "--client",
        "--api",
        "-s, --save-results / --no-save",
        "-o, --output-dir",
        "-R, --resume",
        "--shuffle",
        "--seed",
        "--timeout",
        "--max-retries",
        "-e, --endpoints",
        "-v, --verbose",
        "--json",
        "--rescore",
    ):
        assert flag in res.stdout, flag
