"""The reference protocol with the real client: ``verifiers==0.1.12``'s own ``ZMQEnvClient`` (in
``.venv-ref``) calls our vf-serve as prime-rl v0.5.0's orchestrator does (tests/serve/ref_driver.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.scripted_server import Reply, ScriptedServer, tool_call
from tests.serve.conftest import LOGIC, PROBE_ROOT, Served

DRIVER = Path(__file__).with_name("ref_driver.py")


def test_reference_client_gets_valid_token_level_outputs(
    reference_python: Path, logic_served: Served, model_server: ScriptedServer, tmp_path: Path
) -> None:
    rows = httpx.get(f"{logic_served.url}/dataset", params={"limit": 4}).json()["rows"]
    inputs = tmp_path / "inputs.json"
    # What the orchestrator hands run_rollout: rows of its own (bridge) dataset, i.e. our /dataset rows.
    inputs.write_text(
        json.dumps([{k: r[k] for k in ("prompt", "example_id", "task", "answer", "info")} for r in rows])
    )
    proc = subprocess.run(
        [str(reference_python), str(DRIVER), logic_served.zmq, model_server.url, "m", str(inputs)],
        cwd="/",  # never import our `verifiers` from the checkout
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    # The same completions scored by vf-eval itself (a real run directory's results.jsonl).
    run_dir = tmp_path / "eval"
    env_id, env_args = LOGIC
    cmd = [sys.executable, "-m", "verifiers.cli.eval", env_id, "-b", model_server.url, "-m", "m"]
    cmd += ["-n", "4", "-r", "1", "-a", json.dumps(env_args), "-o", str(run_dir)]
    ev = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert ev.returncode == 0, ev.stderr[-3000:]
    rows_out = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    want = {r["example_id"]: r for r in rows_out}
    assert sorted(want) == [0, 1, 2, 3]
    digests = out["train"] + [d for g in out["eval"] for d in g]
    assert len(out["train"]) == 8 and [len(g) for g in out["eval"]] == [2, 2, 2, 2]
    for d in digests:
        ref = want[d["example_id"]]
        assert d["error"] is None
        assert d["completion"] == ref["completion"]
        assert d["reward"] == ref["reward"] and d["metrics"] == ref["metrics"]
        assert d["steps"] == 1 and d["token_lengths"] == [[10, 1]]
    assert {d["reward"] for d in digests} == {0.0, 1.0}


def test_reference_client_with_tools_and_a_sandbox(
    reference_python: Path, serve_factory: Callable[..., Served], tmp_path: Path
) -> None:
    """A multi-turn tool rollout (a bash call in the rollout's sandbox, then an answer) through the real
    client, against a server that tokenizes like vLLM: two steps, the second extending the first."""
    log = tmp_path / "sandboxes.log"
    served = serve_factory("serve-probe-env", {"log_path": str(log)}, cwd=PROBE_ROOT)

    def reply(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="done: " + str(body["messages"][-1]["content"]).strip())
        return Reply(content=None, tool_calls=[tool_call("bash", {"command": "echo hi"})])

    with ScriptedServer(handler=reply, tokenize=True) as model:
        row = httpx.get(f"{served.url}/dataset", params={"limit": 1}).json()["rows"][0]
        inputs = tmp_path / "inputs.json"
        inputs.write_text(
            json.dumps([{k: row[k] for k in ("prompt", "example_id", "task", "answer", "info")}])
        )
        proc = subprocess.run(
            [str(reference_python), str(DRIVER), served.zmq, model.url, "m", str(inputs)],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    digests = out["train"] + out["eval"][0]
    assert len(digests) == 4
    for d in digests:
        assert d["error"] is None and d["steps"] == 2, json.dumps(d)[:2000]
        roles = [m["role"] for m in d["completion"]]
        assert roles == ["assistant", "tool", "assistant"]
        assert d["completion"][0]["tool_calls"][0]["name"] == "bash"  # the reference's flat ToolCall
        assert "hi" in d["completion"][1]["content"]
        (p0, c0), (p1, _) = d["token_lengths"]
        assert p1 > p0 + c0  # the second prompt holds the first call and the tool's answer
    text = log.read_text().split()
    assert text.count("acquired") == text.count("released") == 4
