"""``vf-push --results RUN_DIR`` and ``vf-eval … --push`` end to end, on a real port: a vf-init project
published with vf-push, a real run directory made by vf-eval against the scripted model server, pushed,
resumed, and read back (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub_server import services
from tests.hub.conftest import LiveHub
from tests.hub.test_e2e import make_project, vf_push
from tests.scripted_server import Rule, ScriptedServer
from verifiers.hub import wire
from verifiers.hub.client import HubClient
from verifiers.hub.results import (
    create_body,
    fitted_record,
    push_run,
    read_metadata,
    read_results,
    rollout_record,
)

RULES = [Rule("capital of France", "Paris"), Rule("days are in a week", "7")]


@pytest.fixture(autouse=True)
def _no_client_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # HubClients in this process must not pick up this machine's hub login
    monkeypatch.setenv("VF_HUB_CONFIG", os.devnull)
    monkeypatch.delenv("VF_HUB_TOKEN", raising=False)
    monkeypatch.delenv("VF_HUB_URL", raising=False)


@pytest.fixture
def token(live_hub: LiveHub) -> str:
    services.create_user(live_hub.hub, "alice")
    return services.create_token(live_hub.hub, "alice", scopes=["publish"])[0]


def _cli_env(url: str, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
    env.update(VF_HUB_URL=url, VF_HUB_TOKEN=token, VF_HUB_CONFIG=os.devnull, NO_COLOR="1", COLUMNS="200")
    return env


def _vf(module: str, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"import sys; from {module} import main; main(sys.argv[1:])", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_dirs(work: Path) -> list[Path]:
    return sorted(p.parent for p in (work / "outputs").rglob("metadata.json"))


def test_push_a_real_run_then_resume_then_vf_eval_push(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    project = make_project(work / "environments")
    pushed = vf_push(project, live_hub.url, token, "--visibility", "public")
    assert pushed.returncode == 0, pushed.stderr
    env = _cli_env(live_hub.url, token)

    with ScriptedServer(rules=RULES, default="no idea") as model:
        ran = _vf(
            "verifiers.cli.eval",
            "demo-env",
            "-m",
            "scripted/m",
            "-b",
            model.url,
            "-n",
            "7",
            "-r",
            "2",
            cwd=work,
            env=env,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        (run_dir,) = _run_dirs(work)

        # an interrupted push: only the first chunk of two rollouts went up, nothing was finalized
        rows = list(read_results(run_dir))
        assert len(rows) == 14
        with HubClient(url=live_hub.url, token=token) as client:
            started = client.create_run("alice", "demo-env", create_body(read_metadata(run_dir), "public"))
            client.upload_rollouts(started.id, [rollout_record(r) for r in rows[:2]])

        res = _vf(
            "verifiers.cli.push", "--results", str(run_dir), "--visibility", "public", cwd=work, env=env
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"pushed eval run {started.id} of alice/demo-env 0.1.0 (scripted/m, public)" in res.stdout
        assert "12 rollouts sent, 2 already there" in res.stdout
        assert f"{live_hub.url}/alice/demo-env/evals/{started.id}" in res.stdout

        with HubClient(url=live_hub.url) as anonymous:  # public: readable without a token
            run = anonymous.run(started.id)
            meta = json.loads((run_dir / "metadata.json").read_text())
            assert (run.status, run.rollout_count, run.content_hash) == (
                "complete",
                14,
                meta["env_content_hash"],
            )
            assert run.avg_reward is not None and abs(run.avg_reward - meta["avg_reward"]) < 1e-9
            assert run.pass_at_k == pytest.approx(meta["pass_at_k"])
            assert run.sampling_args == meta["sampling_args"] and run.sdk_version == meta["sdk_version"]
            good = anonymous.rollouts(started.id, min_reward=1.0, per_page=100)
            assert good.total == 4  # two questions the scripted model knows, two rollouts each
            assert {r.answer for r in good.items} == {"Paris", "7"}
            board = anonymous.leaderboard("alice", "demo-env")
            assert [(e.model, e.run_id) for e in board.entries] == [("scripted/m", started.id)]

        # pushing again changes nothing: the run is complete
        again = _vf("verifiers.cli.push", "--results", str(run_dir), cwd=work, env=env)
        assert again.returncode == 0 and "0 rollouts sent, 14 already there" in again.stdout

        # vf-eval --push: a new run, uploaded private when it finishes
        ran = _vf(
            "verifiers.cli.eval",
            "demo-env",
            "-m",
            "scripted/m",
            "-b",
            model.url,
            "-n",
            "2",
            "-r",
            "1",
            "--push",
            cwd=work,
            env=env,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "pushed eval run" in ran.stdout and "(scripted/m, private): 2 rollouts sent" in ran.stdout
    with HubClient(url=live_hub.url, token=token) as client:
        runs = client.runs("alice", "demo-env")
        assert [r.visibility for r in runs.items] == ["private", "public"]
    with HubClient(url=live_hub.url) as anonymous:
        assert anonymous.runs("alice", "demo-env").total == 1


def test_a_changed_local_environment_is_refused(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    project = make_project(work / "environments")
    assert vf_push(project, live_hub.url, token).returncode == 0
    module = project / "demo_env" / "__init__.py"
    module.write_text(module.read_text() + "\n# edited after publishing\n")
    env = _cli_env(live_hub.url, token)
    with ScriptedServer(rules=RULES) as model:
        ran = _vf(
            "verifiers.cli.eval",
            "demo-env",
            "-m",
            "m",
            "-b",
            model.url,
            "-n",
            "1",
            "--push",
            cwd=work,
            env=env,
        )
    assert ran.returncode != 0
    assert "does not match alice/demo-env 0.1.0" in ran.stderr and "Traceback" not in ran.stderr
    with HubClient(url=live_hub.url, token=token) as client:
        assert client.runs("alice", "demo-env").total == 0


def test_truncation_is_documented_and_bounded() -> None:
    long = "x" * (wire.MESSAGE_TEXT_LIMIT * 3)
    row = {
        "example_id": 3,
        "rollout_index": 0,
        "prompt": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url"}]}],
        "completion": [
            {
                "role": "assistant",
                "content": long,
                "reasoning_content": "hmm\x00",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": {"x": 1}}}
                ],
            },
            *({"role": "tool", "content": long, "tool_call_id": "c1"} for _ in range(400)),
        ],
        "reward": 0.5,
        "metrics": {},
        "error": None,
    }
    record = rollout_record(row)
    assert isinstance(record.prompt, list) and record.prompt[0].content == "look\n[image_url]"
    assert isinstance(record.completion, list) and len(record.completion) == wire.MESSAGES_LIMIT
    first = record.completion[0]
    assert first.content is not None and len(first.content) == wire.MESSAGE_TEXT_LIMIT
    assert first.content.endswith(wire.TRUNCATION_MARK)
    assert first.reasoning_content == "hmm\ufffd"
    assert first.tool_calls[0].name == "calc" and first.tool_calls[0].arguments == '{"x": 1}'
    assert any(m.role == "note" and "messages left out" in (m.content or "") for m in record.completion)
    fitted, body = fitted_record(row)
    assert len(body) < 768 * 1024  # still one chunk under the hub's 1 MiB body limit
    assert fitted.model_dump_json().encode() == body
    with pytest.raises(wire.HubClientError, match="reward is nan"):
        rollout_record({**row, "reward": float("nan")})


def test_push_run_refuses_a_running_directory(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text(
        json.dumps(
            {
                "env_id": "demo-env",
                "env_version": "0.1.0",
                "env_content_hash": "0" * 64,
                "sdk_version": "0",
                "model": "m",
                "base_url": "http://x",
                "num_examples": 1,
                "rollouts_per_example": 1,
                "started_at": "2026-12-01T00:00:00+00:00",
                "status": "running",
            }
        )
    )
    with pytest.raises(wire.HubClientError, match="still running"):
        push_run(HubClient(url="http://127.0.0.1:9"), tmp_path)
