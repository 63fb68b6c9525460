"""``vf-push --results RUN_DIR`` and ``vf-eval … --push`` end to end, on a real port: a vf-init project
published with vf-push, a real run directory made by vf-eval against the scripted model server, pushed,
resumed, and read back (SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hub_server import services
from tests.hub.conftest import LiveHub
from tests.hub.test_e2e import bump_version, make_project, vf_push
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

RULES = [Rule(match="capital of France", content="Paris"), Rule(match="days are in a week", content="7")]


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
        # one 95% interval, labelled, in vf-eval's summary, the push, the API and vf-hub info (issue 32 item 3)
        low, high = wire.wilson_interval(meta["avg_reward"], 14)
        assert (run.reward_ci_low, run.reward_ci_high) == (pytest.approx(low), pytest.approx(high))
        reward = wire.describe_reward(meta["avg_reward"], 14, meta["std_reward"])
        assert wire.ci_text(low, high) in reward and "±" not in ran.stdout + res.stdout
        assert reward in ran.stdout  # the vf-eval summary
        assert f"reward: {reward} over 14 scored rollouts" in res.stdout
        info = _vf("verifiers.cli.hub", "info", "alice/demo-env", cwd=work, env=env)
        assert info.returncode == 0, info.stderr
        assert f"mean {meta['avg_reward']:.3f}, {wire.ci_text(low, high)}" in info.stdout

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
    assert ran.returncode == 1
    assert "matches no published version of alice/demo-env (0.1.0 has" in ran.stderr
    assert "publish this code as a new version first" in ran.stderr and "Traceback" not in ran.stderr
    assert "checked before the run; nothing was run" in ran.stderr  # not after the whole eval
    assert not model.requests and not (work / "outputs").exists()
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


# --- issue 22: --push checks before the run, versions by content hash, errors that say what to do ----------
def _eval(work: Path, env: dict[str, str], model_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _vf(
        "verifiers.cli.eval",
        "demo-env",
        "-m",
        "m",
        "-b",
        model_url,
        "-n",
        "2",
        "-r",
        "1",
        *args,
        cwd=work,
        env=env,
    )


def _no_hub_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VF_HUB_", "OPENAI_API_KEY"))}
    env.update(VF_HUB_CONFIG=os.devnull, NO_COLOR="1", COLUMNS="200")
    return env


def test_push_is_checked_before_the_first_rollout(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    from verifiers.clients.local_model import free_port

    work = tmp_path / "work"
    project = make_project(work / "environments")
    with ScriptedServer(rules=RULES) as model:
        # Not published yet: said before anything runs.
        ran = _eval(work, _cli_env(live_hub.url, token), model.url, "--push")
        assert ran.returncode == 1, ran.stderr
        assert "demo-env is not on the hub" in ran.stderr and "publish it first" in ran.stderr
        assert "checked before the run; nothing was run" in ran.stderr
        assert vf_push(project, live_hub.url, token).returncode == 0
        no_token = _eval(work, {**_cli_env(live_hub.url, token), "VF_HUB_TOKEN": ""}, model.url, "--push")
        assert no_token.returncode == 2 and f"no hub token for {live_hub.url}" in no_token.stderr
        nowhere = f"http://127.0.0.1:{free_port()}"
        down = _eval(work, _no_hub_env(), model.url, "--push", "--hub-url", nowhere, "--token", token)
        assert down.returncode == 1 and f"cannot reach the hub at {nowhere}" in down.stderr
        bad = _eval(
            work, _no_hub_env(), model.url, "--push", "--hub-url", live_hub.url, "--token", "vfh_wrong"
        )
        assert bad.returncode == 1 and "refused the token" in bad.stderr
        for failed in (ran, no_token, down, bad):
            assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1, (
                failed.stderr
            )
        assert not model.requests and not (work / "outputs").exists()  # no rollout, no run directory
        # --token / --hub-url, like vf-push's, with nothing in the environment
        ok = _eval(work, _no_hub_env(), model.url, "--push", "--hub-url", live_hub.url, "--token", token)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "pushed eval run" in ok.stdout and "of alice/demo-env 0.1.0" in ok.stdout
        assert len(model.requests) == 2
    flags_only = _vf("verifiers.cli.eval", "demo-env", "--token", token, cwd=work, env=_no_hub_env())
    assert flags_only.returncode == 2 and "--token and --hub-url are for --push" in flags_only.stderr


def test_version_bump_of_an_editable_install_then_push(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path]
) -> None:
    """Dead end 2: an editable install, edited and bumped to 0.1.1 without reinstalling, pushed with
    vf-push, then `vf-eval … --push`: the run is of 0.1.1 (the source's version, not the stale
    install metadata's 0.1.0) and pushes; a run directory recording the stale version still goes to
    the version its content hash matches."""
    project = make_project(tmp_path / "src")
    assert vf_push(project, live_hub.url, token).returncode == 0  # 0.1.0
    py = make_venv("editable")
    # vf-install PATH, as a user installs a project they work on: editable (uv, with this machine's index
    # configuration for the build backend)
    installed = subprocess.run(
        [str(py), "-m", "verifiers.cli.install", str(project), "--no-deps"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "VF_HUB_CONFIG": os.devnull,
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        },
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "installed demo-env 0.1.0 (editable" in installed.stdout
    module = project / "demo_env" / "__init__.py"
    module.write_text(module.read_text() + "\n# a fix, released as 0.1.1\n")
    bump_version(project, "0.1.1")
    assert vf_push(project, live_hub.url, token).returncode == 0
    work = tmp_path / "elsewhere"  # no ./environments: the editable install is what loads
    work.mkdir()
    probe = subprocess.run(
        [str(py), "-c", "import importlib.metadata as md; print(md.version('demo-env'))"],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert probe.stdout.strip() == "0.1.0"  # the install's metadata is stale: the case at hand
    env = _cli_env(live_hub.url, token)
    with ScriptedServer(rules=RULES) as model:
        ran = subprocess.run(
            [
                str(py),
                "-m",
                "verifiers.cli.eval",
                "demo-env",
                "-m",
                "m",
                "-b",
                model.url,
                "-n",
                "2",
                "-r",
                "1",
                "--push",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "of alice/demo-env 0.1.1 (m, private): 2 rollouts sent" in ran.stdout
        (run_dir,) = _run_dirs(work)
        assert json.loads((run_dir / "metadata.json").read_text())["env_version"] == "0.1.1"
        # A run directory that recorded the stale version (as vf-eval did before): pushed to 0.1.1.
        again = subprocess.run(
            [
                str(py),
                "-m",
                "verifiers.cli.eval",
                "demo-env",
                "-m",
                "m",
                "-b",
                model.url,
                "-n",
                "1",
                "-r",
                "1",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr
    (stale,) = [d for d in _run_dirs(work) if d != run_dir]
    meta = json.loads((stale / "metadata.json").read_text())
    (stale / "metadata.json").write_text(json.dumps({**meta, "env_version": "0.1.0"}))
    res = _vf("verifiers.cli.push", "--results", str(stale), cwd=work, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "the run records 0.1.0, but its code" in res.stdout and "pushing against 0.1.1" in res.stdout
    assert "of alice/demo-env 0.1.1" in res.stdout
    with HubClient(url=live_hub.url, token=token) as client:
        assert {r.version for r in client.runs("alice", "demo-env").items} == {"0.1.1"}


def test_push_results_of_an_environment_not_on_the_hub_says_publish_it_first(
    live_hub: LiveHub, token: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    make_project(work / "environments")
    env = _cli_env(live_hub.url, token)
    with ScriptedServer(rules=RULES) as model:
        assert _eval(work, env, model.url).returncode == 0
    (run_dir,) = _run_dirs(work)
    res = _vf("verifiers.cli.push", "--results", str(run_dir), cwd=work, env=env)
    assert res.returncode == 1
    assert f"demo-env is not on the hub at {live_hub.url}" in res.stderr and "publish it first" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_stored_token_for_another_hub_is_named(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_project(work / "environments")
    config = tmp_path / "hub-config.toml"
    env = {**_no_hub_env(), "VF_HUB_CONFIG": str(config)}
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from verifiers.hub.wire import save_config; save_config('http://other-hub:9000', 'vfh_x')",
        ],
        env=env,
        check=True,
    )
    with ScriptedServer(rules=RULES) as model:
        ran = _eval(work, env, model.url, "--push", "--hub-url", live_hub.url)
    assert ran.returncode == 2
    assert f"no hub token for {live_hub.url}" in ran.stderr
    assert "the stored token (vf-hub login) is for another hub, http://other-hub:9000" in ran.stderr
    res = _vf("verifiers.cli.push", "--results", str(work), "--url", live_hub.url, cwd=work, env=env)
    assert res.returncode == 2 and "is for another hub, http://other-hub:9000" in res.stderr


def _suite(work: Path, model_url: str, *tables: str) -> Path:
    suite = work / "suite.toml"
    suite.write_text(
        "".join(
            f'[[eval]]\nenv_id = "demo-env"\nmodel = "m"\nbase_url = "{model_url}"\n{t}\n' for t in tables
        )
    )
    return suite


def test_a_suite_pushes_every_entry_and_fails_loudly_where_it_cannot(
    live_hub: LiveHub, token: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    project = make_project(work / "environments")
    env = _cli_env(live_hub.url, token)
    with ScriptedServer(rules=RULES) as model:
        suite = _suite(
            work,
            model.url,
            "num_examples = 2\nrollouts_per_example = 1",
            "num_examples = 3\nrollouts_per_example = 2",
        )
        # Not published: the suite stops before its first rollout, naming every entry.
        refused = _vf("verifiers.cli.eval", "@", str(suite), "--push", cwd=work, env=env)
        assert refused.returncode == 1
        assert "2 of 2 evaluations cannot be pushed, so none was run" in refused.stderr
        assert "[[eval]] #1" in refused.stderr and "[[eval]] #2" in refused.stderr
        assert not model.requests and not (work / "outputs").exists()
        assert vf_push(project, live_hub.url, token).returncode == 0
        ran = _vf("verifiers.cli.eval", "@", str(suite), "--push", cwd=work, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert ran.stdout.count("pushed eval run") == 2
    with HubClient(url=live_hub.url, token=token) as client:
        runs = client.runs("alice", "demo-env").items
    assert sorted((r.num_examples, r.rollout_count, r.status) for r in runs) == [
        (2, 2, "complete"),
        (3, 6, "complete"),
    ]
    table = ran.stdout[ran.stdout.index("Suite: 2 evaluations") :]
    assert "pushed" in table and table.count("yes") == 2


def _toml(value: object) -> str:
    """A TOML inline value (strings as JSON writes them, which TOML's basic strings read the same)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def test_a_run_over_large_env_args_pushes(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    """Issue 25 item 4: rows too big for the hub's 1 MiB body, given through a suite file, are recorded by
    content hash (a file in the run directory) and the run pushes."""
    work = tmp_path / "work"
    project = make_project(work / "environments")
    module = project / "demo_env" / "__init__.py"
    text = module.read_text()
    text = text.replace(
        "def load_environment(system_prompt: str = SYSTEM_PROMPT, strict: bool = False)",
        "def load_environment(system_prompt: str = SYSTEM_PROMPT, strict: bool = False, rows: list | None = None)",
    ).replace("for row in ROWS]", "for row in (rows or ROWS)]")
    module.write_text(text)
    assert vf_push(project, live_hub.url, token).returncode == 0
    filler = "x" * 200_000  # ten rows of 200 kB: 2 MB of env_args
    rows = [
        {"question": f"What is the capital of France? {i}", "answer": "Paris", "info": {"blob": filler}}
        for i in range(10)
    ]
    env = _cli_env(live_hub.url, token)
    with ScriptedServer(rules=RULES) as model:
        suite = work / "suite.toml"
        suite.write_text(
            f'[[eval]]\nenv_id = "demo-env"\nmodel = "m"\nbase_url = "{model.url}"\nnum_examples = 3\n'
            f"rollouts_per_example = 1\nenv_args = {{ strict = false, rows = {_toml(rows)} }}\n"
        )
        ran = _vf("verifiers.cli.eval", "@", str(suite), "--push", cwd=work, env=env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr
    (run_dir,) = _run_dirs(work)
    recorded = json.loads((run_dir / "metadata.json").read_text())["env_args"]
    assert recorded["strict"] is False
    ref = recorded["rows"]
    assert set(ref) == {"$file", "sha256", "bytes"} and ref["bytes"] > 2_000_000
    data = (run_dir / ref["$file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == ref["sha256"] and json.loads(data) == rows
    assert (run_dir / "metadata.json").stat().st_size < 10_000
    with HubClient(url=live_hub.url, token=token) as client:
        (run,) = client.runs("alice", "demo-env").items
    assert run.status == "complete" and run.env_args == recorded
    # A run directory from before (every value inline, 2 MB): its upload sends the reference too.
    old = tmp_path / "old-run"
    shutil.copytree(run_dir, old)
    meta = json.loads((old / "metadata.json").read_text())
    meta.update(env_args={"strict": False, "rows": rows}, run_id="0123456789abcdef-old")
    (old / "metadata.json").write_text(json.dumps(meta))
    shutil.rmtree(old / "env_args")
    res = _vf("verifiers.cli.push", "--results", str(old), cwd=work, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    with HubClient(url=live_hub.url, token=token) as client:
        runs = client.runs("alice", "demo-env").items
    assert len(runs) == 2 and all(r.env_args["rows"]["sha256"] == ref["sha256"] for r in runs)
