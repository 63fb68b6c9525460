"""The scripted model's two faces (issue 32, item 1): ``vf-model-stub RULES`` and ``vf-eval ENV -m
scripted:RULES``, on a tool environment scaffolded by ``vf-init --tools`` (whose own test must pass as
generated), and ``tests/scripted_server.py --rules``, which reads the same rules."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.cli._helpers import SERVER, assert_one_line_error, read_results, run_cli, run_dirs, script
from verifiers.clients.local_model import free_port

TOOL_RULES = {
    "default": "no idea",
    "rules": [
        {"match": "2 + 3", "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"tool_result": {"equals": "5"}, "content": "5"},
    ],
}


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


@pytest.fixture
def tools_env(tmp_path: Path) -> Path:
    """A working directory holding ``vf-init --tools my-tools`` as generated."""
    res = run_cli("vf-init", "--tools", "my-tools", cwd=tmp_path)
    assert res.code == 0, res.stderr
    assert "vf-eval my-tools -m scripted:environments/my_tools/scripted_model.toml" in res.stdout
    return tmp_path


def test_vf_init_tools_scaffolds_a_tool_env_whose_own_test_passes(tools_env: Path) -> None:
    pkg = tools_env / "environments" / "my_tools"
    files = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "my_tools/__init__.py",
        "pyproject.toml",
        "scripted_model.toml",
        "tests/test_my_tools.py",
    ]
    assert "vf.ToolEnv(" in (pkg / "my_tools" / "__init__.py").read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "environments/my_tools/tests"],
        cwd=tools_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout, proc.stdout


def test_vf_eval_with_the_scripted_model_scores_one_on_the_scaffold(tools_env: Path) -> None:
    rules = "environments/my_tools/scripted_model.toml"
    res = run_cli("vf-eval", "my-tools", "-m", f"scripted:{rules}", "--json", cwd=tools_env)
    assert res.code == 0, res.stderr
    assert "does not call tools" not in res.stdout + res.stderr
    summary = json.loads(res.stdout)
    meta = summary["metadata"]
    assert meta["model"] == f"scripted:{rules}"
    assert meta["avg_reward"] == 1.0 and meta["status"] == "completed"
    (run,) = run_dirs(tools_env)
    results = read_results(run)
    assert len(results) == 3
    by_question = {r["prompt"][-1]["content"]: r for r in results}
    parallel = by_question["What is (3 + 4) * (5 + 6)?"]
    # Two parallel calls in one assistant message, then one on their results, then the answer.
    assistant = [m for m in parallel["completion"] if m["role"] == "assistant"]
    assert [len(m.get("tool_calls") or []) for m in assistant] == [2, 1, 0]
    assert [t["finish_reason"] for t in parallel["turns"]] == ["tool_calls", "tool_calls", "stop"]
    assert parallel["metrics"]["tool_calls"] == 3.0
    for r in results:
        assert r["reward"] == 1.0 and r["error"] is None
        assert r["usage"]["prompt_tokens"] > 0 and r["usage"]["completion_tokens"] > 0


def test_vf_eval_scripted_errors_are_one_line_before_anything_runs(tools_env: Path) -> None:
    bad = tools_env / "bad.toml"
    bad.write_text('[[rules]]\nname = "first"\nmatch = "x"\ntool_calls = [{ nme = "add" }]\n')
    res = run_cli("vf-eval", "my-tools", "-m", "scripted:bad.toml", cwd=tools_env)
    assert_one_line_error(
        res, 2, "bad.toml", "rule 1 ('first')", "tool_calls[0]", "'nme'", "did you mean 'name'"
    )
    res = run_cli("vf-eval", "my-tools", "-m", "scripted:nowhere.toml", cwd=tools_env)
    assert_one_line_error(res, 2, "no rules file at nowhere.toml")
    assert not run_dirs(tools_env)


def test_vf_eval_warns_when_the_rules_never_call_a_tool(tools_env: Path) -> None:
    (tools_env / "talk.toml").write_text('default = "384"\n')
    res = run_cli("vf-eval", "my-tools", "-m", "scripted:talk.toml", "-n", "1", cwd=tools_env)
    assert res.code == 0, res.stderr
    assert "scripted:talk.toml does not call tools, and my-tools offers 2 (add, multiply)" in res.stdout


def test_vf_eval_records_scripted_errors_as_errors(tools_env: Path) -> None:
    (tools_env / "down.toml").write_text('[default]\nerror = { status = 500, message = "scripted outage" }\n')
    res = run_cli(
        "vf-eval", "my-tools", "-m", "scripted:down.toml", "-n", "1", "--max-retries", "0", cwd=tools_env
    )
    assert res.code == 1, res.stdout + res.stderr  # every rollout failed
    (run,) = run_dirs(tools_env)
    (result,) = read_results(run)
    assert result["reward"] is None
    assert result["error"]["category"] == "infra" and "scripted outage" in result["error"]["message"]


def test_vf_model_stub_serves_rules_and_logs_each_request(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(TOOL_RULES))
    port = free_port()
    proc = subprocess.Popen(
        [script("vf-model-stub"), str(rules), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"vf-model-stub listening on http://127.0.0.1:{port}/v1 (2 rules"), line
        url = f"http://127.0.0.1:{port}/v1"
        body = post(url, {"model": "x", "messages": [{"role": "user", "content": "what is 2 + 3?"}]})
        (choice,) = body["choices"]
        assert choice["finish_reason"] == "tool_calls"
        assert choice["message"]["tool_calls"][0]["function"]["name"] == "add"
        assert (
            body["usage"]["total_tokens"]
            == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
        )
        assert proc.stdout.readline().strip() == "request 1: rule 1: tool_calls add"
    finally:
        proc.terminate()
        proc.wait(10)


def test_vf_model_stub_refuses_bad_rules_in_one_line(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\nmatch = { regex = "(" }\ncontent = "x"\n')
    res = run_cli("vf-model-stub", str(rules), cwd=tmp_path)
    assert_one_line_error(res, 2, "rule 1", "match.regex", "not a regular expression")


def test_the_test_servers_rules_mode_answers_a_tool_calls_rule(tmp_path: Path) -> None:
    """tests/scripted_server.py --rules used to end in ``KeyError: 'content'`` on a rule with tool_calls."""
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(TOOL_RULES))
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--rules", str(rules)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        url = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        first = post(url, {"model": "x", "messages": [{"role": "user", "content": "2 + 3"}]})
        (call,) = first["choices"][0]["message"]["tool_calls"]
        assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
        assert first["choices"][0]["finish_reason"] == "tool_calls"
        messages = [
            {"role": "user", "content": "2 + 3"},
            first["choices"][0]["message"],
            {"role": "tool", "tool_call_id": call["id"], "content": "5"},
        ]
        assert post(url, {"model": "x", "messages": messages})["choices"][0]["message"]["content"] == "5"
    finally:
        proc.terminate()
        proc.wait(10)
