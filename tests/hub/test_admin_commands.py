"""``vf-hub``'s admin commands (the real console script: the SDK's ``vf-hub`` handing over to
``hub_server.cli``) on a data dir that ``vf-hub serve`` never opened: they migrate it first, as ``serve``
does, or — with ``VF_HUB_AUTO_MIGRATE=0`` — say in one line what to run, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub_server import migrate
from hub_server.cli import DEFAULT_PORT
from verifiers.hub.client import DEFAULT_URL

VF_HUB = Path(sys.executable).parent / "vf-hub"


def vf_hub(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VF_HUB_")}
    return subprocess.run(
        [str(VF_HUB), *args], env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


def test_admin_commands_migrate_a_data_dir_serve_never_opened(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    head = migrate.head_revision(f"sqlite:///{data / 'hub.db'}")
    made = vf_hub("user", "create", "alice", "--data-dir", str(data))
    assert made.returncode == 0, made.stderr
    assert "created user alice" in made.stdout
    assert f"migrated a new database at sqlite:///{data / 'hub.db'} to {head}" in made.stderr
    token = vf_hub("token", "create", "alice", "--scope", "publish", "--data-dir", str(data))
    assert token.returncode == 0 and token.stdout.strip().startswith("vfh_"), token.stderr
    assert "migrated" not in token.stderr  # at head now: nothing more to do
    current = vf_hub("db", "current", "--data-dir", str(data))
    assert current.stdout.strip() == head


def test_without_auto_migrate_they_say_what_to_run(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    refused = vf_hub("user", "create", "alice", "--data-dir", str(data), VF_HUB_AUTO_MIGRATE="0")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "never migrated" in line and "run `vf-hub db upgrade`" in line
    assert not (data / "hub.db").exists()  # no empty database left behind
    assert vf_hub("db", "upgrade", "--data-dir", str(data)).returncode == 0
    done = vf_hub("user", "create", "alice", "--data-dir", str(data), VF_HUB_AUTO_MIGRATE="0")
    assert done.returncode == 0 and "created user alice" in done.stdout, done.stderr


def test_one_default_port_for_the_hub_and_its_clients() -> None:
    assert f"http://127.0.0.1:{DEFAULT_PORT}" == DEFAULT_URL
    assert DEFAULT_PORT != 8000  # model servers (vLLM, llama.cpp, the README's examples) listen there
    helped = vf_hub("serve", "--help")
    assert helped.returncode == 0 and str(DEFAULT_PORT) in helped.stdout


def test_serve_believes_forwarded_headers_only_from_named_proxies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 19: `vf-hub serve` ran uvicorn with proxy headers on, which believes X-Forwarded-For
    from 127.0.0.1; now only with --trusted-proxy / VF_HUB_TRUSTED_PROXIES (tests/hub/test_side_channels.py
    shows what the headers then do to download counts)."""
    import uvicorn
    from typer.testing import CliRunner

    from hub_server.cli import app

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **kw: calls.append(kw))
    for key in ("VF_HUB_DATA_DIR", "VF_HUB_WORKERS", "VF_HUB_SMOKE_INDEX_URL", "VF_HUB_TRUSTED_PROXIES"):
        monkeypatch.delenv(key, raising=False)  # serve sets them; monkeypatch puts them back
    runner = CliRunner()
    args = ["serve", "--data-dir", str(tmp_path / "data")]
    assert runner.invoke(app, args).exit_code == 0
    assert calls[-1]["proxy_headers"] is False and "forwarded_allow_ips" not in calls[-1]
    trusted = [*args, "--trusted-proxy", "10.0.0.7", "--trusted-proxy", "127.0.0.1"]
    assert runner.invoke(app, trusted).exit_code == 0
    assert calls[-1]["proxy_headers"] is True and calls[-1]["forwarded_allow_ips"] == "10.0.0.7,127.0.0.1"
