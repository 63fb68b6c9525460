"""HubClient configuration and its calls against a running hub, vf-hub's admin commands (``hub_server.cli``)
and vf-hub login (the SDK's ``verifiers.cli.hub``)."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub_server import migrate
from hub_server.cli import app as hub_cli
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, LiveHub
from verifiers.cli.hub import main as vf_hub_main
from verifiers.hub.client import HubClient, HubClientError, HubConfig, load_config_file, save_config
from verifiers.hub.packaging import parse_env_spec


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cfg" / "config.toml"
    monkeypatch.setenv("VF_HUB_CONFIG", str(path))
    monkeypatch.delenv("VF_HUB_URL", raising=False)
    monkeypatch.delenv("VF_HUB_TOKEN", raising=False)
    return path


def test_config_file_is_private_and_scoped_to_its_url(
    isolated_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_config("http://hub.example:8000/", "vfh_secret")
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600
    assert load_config_file() == {"url": "http://hub.example:8000", "token": "vfh_secret"}
    assert HubConfig.load() == HubConfig("http://hub.example:8000", "vfh_secret")
    # pointed elsewhere, the stored token is never sent
    monkeypatch.setenv("VF_HUB_URL", "http://other.example")
    elsewhere = HubConfig.load()
    assert elsewhere == HubConfig("http://other.example", None, stored_token_url="http://hub.example:8000")
    assert "the stored token (vf-hub login) is for another hub, http://hub.example:8000" in (
        elsewhere.missing_token_message()
    )
    monkeypatch.setenv("VF_HUB_TOKEN", "vfh_env")
    assert HubConfig.load().token == "vfh_env"
    assert HubConfig.load(token="vfh_arg").token == "vfh_arg"


def test_index_url_embeds_the_token_for_pip() -> None:
    client = HubClient(url="http://127.0.0.1:9", token="vfh_a/b")
    assert client.index_url() == "http://127.0.0.1:9/simple/"
    assert client.index_url(with_token=True) == "http://__token__:vfh_a%2Fb@127.0.0.1:9/simple/"
    client.close()


def test_parse_env_spec() -> None:
    spec = parse_env_spec("Alice/Math_Env@>=0.1,<0.3")
    assert (spec.owner, spec.name, spec.specifier) == ("Alice", "math-env", "<0.3,>=0.1")
    assert parse_env_spec("math-env@1.0").specifier == "==1.0"
    assert parse_env_spec("math-env@latest").specifier == ""
    for bad in ("a/b/c", "x@foo", "@1", "a/b@>>1", ""):
        with pytest.raises(ValueError):
            parse_env_spec(bad)


def login(capsys: pytest.CaptureFixture[str], url: str, token: str) -> tuple[int, str]:
    """``vf-hub login --url URL --token TOKEN`` in this process: its exit status and what it printed."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        vf_hub_main(["login", "--url", url, "--token", token])
    out = capsys.readouterr()
    return int(exited.value.code or 0), out.out + out.err


def test_admin_commands_and_login(
    live_hub: LiveHub, isolated_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = CliRunner()
    db = ["--database-url", live_hub.hub.db.url]
    r = runner.invoke(hub_cli, ["user", "create", "dana", "--admin", *db])
    assert r.exit_code == 0 and "created user dana (admin)" in r.output
    assert runner.invoke(hub_cli, ["user", "create", "dana", *db]).exit_code == 1  # taken
    assert runner.invoke(hub_cli, ["org", "create", "team", "--member", "dana", *db]).exit_code == 0
    r = runner.invoke(hub_cli, ["token", "create", "dana", "--scope", "publish", "--name", "laptop", *db])
    assert r.exit_code == 0, r.output
    token = r.stdout.strip().splitlines()[-1]
    assert token.startswith("vfh_")
    code, output = login(capsys, live_hub.url, token)
    assert code == 0 and "as dana" in output
    assert load_config_file() == {"url": live_hub.url, "token": token}
    with HubClient() as client:  # picks URL and token up from the config file
        me = client.whoami()
    assert (me.username, me.namespaces) == ("dana", ["dana", "team"])
    listing = runner.invoke(hub_cli, ["token", "list", "dana", *db]).output
    token_id = listing.split()[0]
    assert "laptop" in listing and token not in listing
    assert runner.invoke(hub_cli, ["token", "revoke", token_id, *db]).exit_code == 0
    code, output = login(capsys, live_hub.url, token)
    assert code == 1 and "revoked" in output
    r = runner.invoke(hub_cli, ["db", "current", *db])
    assert r.output.strip() == migrate.head_revision(live_hub.hub.db.url)


def test_search_yank_unyank_and_download(live_hub: LiveHub, actors: Actors, tmp_path: Path) -> None:
    with HubClient(url=live_hub.url, token=actors.alice) as alice:
        for version in ("0.1.0", "0.2.0"):
            alice.publish("alice", "demo-env", *Dist(version=version).write(tmp_path / version))
        math = Dist(name="math-env", keywords=["math"])
        alice.publish("alice", "math-env", *math.write(tmp_path / "math"), visibility="private")

        found = alice.search("demo", tags=["demo"], owner="alice")
        assert ([e.full_name for e in found.items], found.total) == (["alice/demo-env"], 1)
        assert [e.name for e in alice.search(sort="name").items] == ["demo-env", "math-env"]

        yanked = alice.yank("alice", "demo-env", "0.2.0", reason="wrong answers")
        assert (yanked.version, yanked.yanked, yanked.yanked_reason) == ("0.2.0", True, "wrong answers")
        assert alice.resolve("demo-env").version == "0.1.0"  # out of resolution...
        assert alice.resolve("demo-env@==0.2.0").yanked  # ...unless pinned
        assert not alice.unyank("alice", "demo-env", "0.2.0").yanked
        resolved = alice.resolve("demo-env")
        assert resolved.version == "0.2.0"

        wheel = resolved.file("bdist_wheel")
        assert wheel is not None
        path = alice.download(wheel, tmp_path / "got")
        assert path == tmp_path / "got" / wheel.filename
        assert hashlib.sha256(path.read_bytes()).hexdigest() == wheel.sha256
        tampered = wheel.model_copy(update={"sha256": "0" * 64})
        with pytest.raises(HubClientError, match="sha256 mismatch"):
            alice.download(tampered, tmp_path / "bad")
        assert list((tmp_path / "bad").iterdir()) == []  # nothing half-written is left
        private_sdist = alice.resolve("math-env").file("sdist")
        assert private_sdist is not None

    with HubClient(url=live_hub.url, token=actors.bob) as bob:  # the private environment stays invisible
        assert [e.name for e in bob.search(sort="name").items] == ["demo-env"]
        with pytest.raises(HubClientError) as refused:
            bob.download(private_sdist, tmp_path / "bob")
        assert refused.value.status_code == 404 and "not found" in str(refused.value)
        with pytest.raises(HubClientError) as refused:
            bob.yank("alice", "demo-env", "0.1.0")
        assert refused.value.status_code == 403


def test_login_refuses_bad_urls_and_unreachable_hubs(
    isolated_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = login(capsys, "ftp://hub.example", "vfh_x")
    assert code == 2 and "must start with http:// or https://" in output
    code, output = login(capsys, "http://127.0.0.1:9", "vfh_x")
    assert code == 1 and "cannot reach the hub at http://127.0.0.1:9" in output
    assert not isolated_config.exists()  # nothing stored for a login that did not happen
