"""The reference protocol with the real client: ``verifiers==0.1.12``'s own ``ZMQEnvClient`` (in
``.venv-ref``) calls our vf-serve as prime-rl v0.5.0's orchestrator does (tests/serve/ref_driver.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, Served

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
