"""``vf-hub``'s client verbs against a live hub (a real port), as a user runs them (each command's ``main``): login, whoami, search,
info, yank/unyank, run list / run visibility, logout; and a run's visibility set at push time and changed
later (``vf-push --results DIR --visibility public`` on a run pushed private), which the leaderboard honours."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub._dists import Dist
from tests.hub.conftest import Actors, LiveHub
from verifiers.hub.client import HubClient, HubClientError
from verifiers.hub.wire import load_config_file


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


_CAPTURE: list[pytest.CaptureFixture[str]] = []


def vf(module: str, *args: str, config: Path) -> Done:
    """A vf-* command's ``main()`` (what its console script runs), in this process: the hub is real and
    on a port, and a process per call would cost seconds each on a loaded machine."""
    assert os.environ["VF_HUB_CONFIG"] == str(config)
    capsys = _CAPTURE[-1]
    capsys.readouterr()
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out = capsys.readouterr()
    return Done(int(exited.value.code or 0), out.out, out.err)


def vf_hub(*args: str, config: Path) -> Done:
    return vf("verifiers.cli.hub", *args, config=config)


def one_line_error(done: Done) -> str:
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vf-hub: error: "), done.stderr
    return lines[0]


@pytest.fixture
def config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Path]:
    _CAPTURE.append(capsys)
    path = tmp_path / "cfg" / "config.toml"
    monkeypatch.setenv("VF_HUB_CONFIG", str(path))
    for name in ("VF_HUB_URL", "VF_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield path
    _CAPTURE.pop()


def test_login_whoami_search_info_yank_unyank_logout(
    live_hub: LiveHub, actors: Actors, config: Path, tmp_path: Path
) -> None:
    url = live_hub.url
    with HubClient(url=url, token=actors.alice) as alice:
        for version in ("0.1.0", "0.2.0"):
            alice.publish("alice", "demo-env", *Dist(version=version).write(tmp_path / version))
        secret = Dist("secret-env", summary="Nobody else sees this", keywords=[])
        alice.publish("alice", "secret-env", *secret.write(tmp_path / "s"), visibility="private")

    done = vf_hub("login", "--url", url, "--token", actors.alice, config=config)
    assert done.returncode == 0, done.stderr
    assert f"logged in to {url} as alice" in done.stdout
    assert load_config_file() == {"url": url, "token": actors.alice}

    done = vf_hub("whoami", config=config)  # URL and token from the login
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [f"alice on {url}", "  scopes: publish"]
    assert json.loads(vf_hub("whoami", "--json", config=config).stdout)["namespaces"] == ["alice", "lab"]

    found = vf_hub("search", "demo", config=config).stdout.splitlines()
    assert len(found) == 1 and found[0].split()[:2] == ["alice/demo-env", "0.2.0"], found
    assert "secret-env" in vf_hub("search", config=config).stdout  # alice may see her private one
    assert (
        "no environments match 'nothing-like-it'" in vf_hub("search", "nothing-like-it", config=config).stdout
    )

    for spec in ("alice/demo-env", "demo-env"):  # a bare name resolves to its owner
        info = vf_hub("info", spec, config=config)
        assert info.returncode == 0, info.stderr
        assert info.stdout.startswith("alice/demo-env: A tiny demo environment")
        assert f"{url}/alice/demo-env" in info.stdout and "install: vf-install alice/demo-env" in info.stdout
        assert "0.2.0" in info.stdout and "(latest)" in info.stdout and "0.1.0" in info.stdout

    done = vf_hub("yank", "demo-env", "0.2.0", "--reason", "wrong answers", config=config)
    assert done.returncode == 0, done.stderr
    assert "yanked alice/demo-env 0.2.0" in done.stdout
    with HubClient(url=url) as anonymous:
        assert anonymous.resolve("demo-env").version == "0.1.0"
    assert "yanked: wrong answers" in vf_hub("info", "alice/demo-env", config=config).stdout
    done = vf_hub("unyank", "alice/demo-env", "0.2.0", config=config)
    assert done.returncode == 0 and "unyanked alice/demo-env 0.2.0" in done.stdout
    with HubClient(url=url) as anonymous:
        assert anonymous.resolve("demo-env").version == "0.2.0"

    refused = one_line_error(vf_hub("yank", "alice/demo-env", "0.1.0", "--token", actors.bob, config=config))
    assert "HTTP 403" in refused
    missing = one_line_error(vf_hub("info", "alice/no-such-env", config=config))
    assert "HTTP 404" in missing

    done = vf_hub("logout", config=config)
    assert done.returncode == 0 and f"removed the token from {config}" in done.stdout
    assert load_config_file() == {"url": url}  # the hub stays the default
    assert f"no hub token for {url}" in one_line_error(vf_hub("whoami", config=config))
    anonymous_search = vf_hub("search", config=config)  # the stored URL, no token: public ones only
    assert "alice/demo-env" in anonymous_search.stdout and "secret-env" not in anonymous_search.stdout
    assert "no stored token" in vf_hub("logout", config=config).stdout


def _run_dir(where: Path, content_hash: str, rewards: list[float]) -> Path:
    """A finished run directory as vf-eval leaves it (metadata.json + results.jsonl)."""
    where.mkdir(parents=True)
    meta = {
        "run_id": "run-" + "a" * 12,
        "env_id": "demo-env",
        "env_version": "0.1.0",
        "env_content_hash": content_hash,
        "sdk_version": "0.1.0",
        "model": "scripted/m",
        "base_url": "http://127.0.0.1:9/v1",
        "num_examples": len(rewards),
        "rollouts_per_example": 1,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "status": "completed",
    }
    (where / "metadata.json").write_text(json.dumps(meta))
    rows = [
        {"example_id": i, "rollout_index": 0, "prompt": "q", "completion": "a", "answer": "a", "reward": r}
        for i, r in enumerate(rewards)
    ]
    (where / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return where


def test_run_visibility_at_push_time_and_later_and_the_leaderboard_honours_it(
    live_hub: LiveHub, actors: Actors, config: Path, tmp_path: Path
) -> None:
    url = live_hub.url
    with HubClient(url=url, token=actors.alice) as alice:
        published = alice.publish("alice", "demo-env", *Dist().write(tmp_path / "dist"))
    run_dir = _run_dir(tmp_path / "run", published.content_hash, [1.0, 0.0, 1.0])
    push = ["--results", str(run_dir), "--url", url, "--token", actors.alice]

    done = vf("verifiers.cli.push", *push, config=config)  # no --visibility: private
    assert done.returncode == 0, done.stderr
    assert "(scripted/m, private)" in done.stdout
    with HubClient(url=url) as anonymous:
        assert anonymous.leaderboard("alice", "demo-env").entries == []
        assert anonymous.runs("alice", "demo-env").total == 0

    # the reported dead end: this exited 0 and the run stayed private
    done = vf("verifiers.cli.push", *push, "--visibility", "public", config=config)
    assert done.returncode == 0, done.stderr
    assert "(scripted/m, public): 0 rollouts sent, 3 already there" in done.stdout
    with HubClient(url=url) as anonymous:
        board = anonymous.leaderboard("alice", "demo-env").entries
        assert [(e.model, e.scored_count) for e in board] == [("scripted/m", 3)]
        run_id = board[0].run_id
        assert anonymous.run(run_id).visibility == "public"

    # pushing again without --visibility leaves it as it is
    done = vf("verifiers.cli.push", *push, config=config)
    assert done.returncode == 0 and "(scripted/m, public)" in done.stdout

    # and later, from vf-hub
    listed = vf_hub("run", "list", "alice/demo-env", "--url", url, "--token", actors.alice, config=config)
    head, *lines = listed.stdout.splitlines()
    assert head.split() == ["RUN", "VISIBILITY", "STATUS", "MODEL", "VERSION", "MEAN", "ROLLOUTS", "CREATED"]
    assert [line.split()[:2] for line in lines] == [[str(run_id), "public"]], listed.stdout + listed.stderr
    done = vf_hub(
        "run", "visibility", str(run_id), "private", "--url", url, "--token", actors.alice, config=config
    )
    assert done.returncode == 0, done.stderr
    assert f"eval run {run_id} of alice/demo-env (scripted/m) is private: off the leaderboard" in done.stdout
    with HubClient(url=url) as anonymous:
        assert anonymous.leaderboard("alice", "demo-env").entries == []
        with pytest.raises(HubClientError) as hidden:
            anonymous.run(run_id)
        assert hidden.value.status_code == 404
    # bob may not see alice's private run, let alone change it; alice's read-only token may not change it
    assert "HTTP 404" in one_line_error(
        vf_hub("run", "visibility", str(run_id), "public", "--url", url, "--token", actors.bob, config=config)
    )
    assert "HTTP 403" in one_line_error(
        vf_hub(
            "run",
            "visibility",
            str(run_id),
            "public",
            "--url",
            url,
            "--token",
            actors.alice_read,
            config=config,
        )
    )
    done = vf_hub(
        "run", "visibility", str(run_id), "public", "--url", url, "--token", actors.alice, config=config
    )
    assert done.returncode == 0 and "is public: on the leaderboard" in done.stdout
    with HubClient(url=url) as anonymous:
        assert [e.run_id for e in anonymous.leaderboard("alice", "demo-env").entries] == [run_id]


def test_a_first_push_with_visibility_public_is_public(
    live_hub: LiveHub, actors: Actors, config: Path, tmp_path: Path
) -> None:
    with HubClient(url=live_hub.url, token=actors.alice) as alice:
        published = alice.publish("alice", "demo-env", *Dist().write(tmp_path / "dist"))
    run_dir = _run_dir(tmp_path / "run", published.content_hash, [1.0])
    done = vf(
        "verifiers.cli.push",
        "--results",
        str(run_dir),
        "--visibility",
        "public",
        "--url",
        live_hub.url,
        "--token",
        actors.alice,
        config=config,
    )
    assert done.returncode == 0 and "(scripted/m, public): 1 rollouts sent" in done.stdout, done.stderr
    with HubClient(url=live_hub.url) as anonymous:
        assert len(anonymous.leaderboard("alice", "demo-env").entries) == 1
