"""A URL's credentials never reach the screen (issue 33 item 8): every message that names a hub URL, a model
base URL or an index URL shows ``scheme://***@host`` (``verifiers._urls.redact_url``), while the requests
still go to the URL as given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._helpers import assert_one_line_error, clean_env, run_cli
from tests.scripted_server import ScriptedServer
from verifiers._urls import redact_url
from verifiers.clients.local_model import free_port
from verifiers.hub.client import HubClient, HubConfig

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("https://alice:s3cret@hub.example/x", "https://***@hub.example/x"),
        ("http://__token__:vfh_abc@127.0.0.1:9/simple/", "http://***@127.0.0.1:9/simple/"),
        ("http://user@host:1", "http://***@host:1"),
        ("postgresql+psycopg://u:p@ss@db:5432/hub", "postgresql+psycopg://***@db:5432/hub"),  # '@' in it
        ("http://host/path@not-userinfo?q=a@b#c@d", "http://host/path@not-userinfo?q=a@b#c@d"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("at http://a:b@x/ and https://c:d@y/z", "at http://***@x/ and https://***@y/z"),
    ],
)
def test_redact_url(given: str, shown: str) -> None:
    assert redact_url(given) == shown


def _hub(port: int) -> str:
    return f"http://alice:{SECRET}@127.0.0.1:{port}"


def test_the_hub_client_names_its_url_without_credentials() -> None:
    config = HubConfig(url=_hub(9), token=None, stored_token_url=f"http://bob:{SECRET}@other.example")
    assert SECRET not in config.missing_token_message()
    assert "no hub token for http://***@127.0.0.1:9" in config.missing_token_message()
    with HubClient(url=_hub(9), token="vfh_x") as client:
        # pip's token form replaces the hub URL's own credentials (and is a placeholder, not the token)
        assert client.token_index_url() == "http://__token__:<token>@127.0.0.1:9/simple/"


def test_vf_hub_and_vf_install_do_not_print_the_hub_urls_credentials(tmp_path: Path) -> None:
    hub = _hub(free_port())  # nothing listens there
    env = clean_env(VF_HUB_CONFIG=str(tmp_path / "cfg.toml"))
    res = run_cli("vf-hub", "whoami", "--url", hub, "--token", "vfh_x", cwd=tmp_path, env=env)
    line = assert_one_line_error(res, 1, "cannot reach the hub at http://***@127.0.0.1:")
    assert SECRET not in res.stdout + res.stderr, line
    res = run_cli("vf-install", "alice/demo", "--hub-url", hub, cwd=tmp_path, env=env)
    line = assert_one_line_error(res, 1, "cannot reach the hub at http://***@127.0.0.1:")
    assert SECRET not in res.stdout + res.stderr, line
    res = run_cli("vf-push", "--results", str(tmp_path), "--hub-url", hub, cwd=tmp_path, env=env)
    assert res.code != 0 and SECRET not in res.stdout + res.stderr, res.stderr


def test_vf_eval_does_not_print_the_base_urls_credentials(workdir: Path) -> None:
    url = f"http://me:{SECRET}@127.0.0.1:{free_port()}/v1"  # nothing listens there
    res = run_cli("vf-eval", "cli-env", "-m", "m", "-b", url, cwd=workdir)
    line = assert_one_line_error(res, 1, "cannot reach http://***@127.0.0.1:")
    assert SECRET not in res.stdout + res.stderr, line


def test_a_run_with_credentials_in_its_base_url_records_and_shows_it_without_them(workdir: Path) -> None:
    out = workdir / "run"
    with ScriptedServer(rules=[], default="a0") as srv:
        url = srv.url.replace("http://", f"http://me:{SECRET}@")
        res = run_cli(
            "vf-eval", "cli-env", "-m", "m", "-b", url, "-n", "2", "-r", "1", "-o", str(out), cwd=workdir
        )
    assert res.code == 0, res.stderr
    assert SECRET not in res.stdout + res.stderr
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["base_url"] == srv.url.replace("http://", "http://***@")
    assert all(SECRET not in p.read_text() for p in out.iterdir() if p.is_file())
