"""The reference protocol with the real client: ``verifiers==0.1.12``'s own ``ZMQEnvClient`` (in
``.venv-ref``) calls our vf-serve as prime-rl v0.5.0's orchestrator does (tests/serve/ref_driver.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, Served
from verifiers.envs import load_environment

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
    # The same completions scored in-process by our engine (what vf-eval runs).
    env = load_environment(LOGIC[0], **LOGIC[1])
    states = env.generate(env.select_rows(4), model_server.url, "m")
    want = {s["example_id"]: s for s in states}
    digests = out["train"] + [d for g in out["eval"] for d in g]
    assert len(out["train"]) == 8 and [len(g) for g in out["eval"]] == [2, 2, 2, 2]
    for d in digests:
        ref = want[d["example_id"]]
        assert d["error"] is None
        assert d["completion"] == ref["completion"]
        assert d["reward"] == ref["reward"] and d["metrics"] == ref["metrics"]
        assert d["steps"] == 1 and d["token_lengths"] == [[10, 1]]
    assert {d["reward"] for d in digests} == {0.0, 1.0}
