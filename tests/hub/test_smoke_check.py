"""Publish-time smoke checks (hub_server.smoke): a good environment passes, a broken one fails with its log,
a hub without a sandbox backend records the check as skipped and why; a check never blocks the publish.

The checks run for real: the wheel is installed into a throwaway venv inside a bubblewrap (else gVisor)
sandbox and rolled out once against the scripted model the check starts there."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub._helpers import BROKEN_SOURCE, smoke_backend
from tests.hub.conftest import Actors, publish, serve_app
from verifiers.clients.local_model import free_port


def _app(tmp_path: Path, sqlite_template: Path, **overrides: object) -> TestClient:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(sqlite_template, data / "hub.db")
    fields: dict[str, object] = {"upstream_index": "none", "smoke_checks": True, **overrides}
    settings = HubSettings(data_dir=data, **fields)  # type: ignore[arg-type]
    return TestClient(create_app(settings))


@pytest.fixture
def smoke_client(tmp_path: Path, sqlite_template: Path) -> Iterator[TestClient]:
    with _app(tmp_path, sqlite_template, smoke_backend=smoke_backend()) as client:
        yield client


def _actors(client: TestClient) -> str:
    from hub_server import services

    hub: Hub = client.app.state.hub  # type: ignore[attr-defined]
    services.create_user(hub, "alice")
    return services.create_token(hub, "alice", scopes=["publish"])[0]


def _check(client: TestClient, name: str, token: str) -> dict[str, object]:
    hub: Hub = client.app.state.hub  # type: ignore[attr-defined]
    assert hub.smoke is not None and hub.smoke.wait_idle(timeout=600)
    r = client.get(
        f"/api/v1/environments/alice/{name}/versions/0.1.0/smoke-check", headers=Actors.auth(token)
    )
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


@pytest.mark.sandbox
def test_good_environment_passes_and_broken_one_fails_with_its_log(smoke_client: TestClient) -> None:
    token = _actors(smoke_client)
    good = Dist(name="smoke-good")
    broken = Dist(name="smoke-broken", files={"smoke_broken/__init__.py": BROKEN_SOURCE})
    for dist in (good, broken):
        r = publish(smoke_client, token, *dist.pair(), name=dist.name)
        assert r.status_code == 201, r.text  # the publish does not wait for the check

    passed = _check(smoke_client, "smoke-good", token)
    assert passed["status"] == "passed", passed["log"]
    assert passed["backend"] in ("bwrap", "runsc") and isinstance(passed["duration_s"], float)
    assert passed["reason"] == ""

    failed = _check(smoke_client, "smoke-broken", token)
    assert failed["status"] == "failed"
    assert str(failed["reason"]).startswith("load_environment: RuntimeError: broken on purpose")
    log = str(failed["log"])
    assert "Successfully installed smoke-broken-0.1.0" in log  # the install itself worked
    assert 'raise RuntimeError("broken on purpose' in log  # the traceback is kept

    # The version stays published and installable either way; the page shows the badge and the log.
    page = smoke_client.get("/alice/smoke-broken", headers={"Accept": "text/html"}).text
    assert 'data-smoke="failed"' in page and "smoke check: failed" in page and "broken on purpose" in page
    page = smoke_client.get("/alice/smoke-good", headers={"Accept": "text/html"}).text
    assert 'data-smoke="passed"' in page


def test_a_hub_without_a_sandbox_backend_skips_the_check_and_says_why(
    tmp_path: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VF_SANDBOX_BACKEND", raising=False)
    monkeypatch.setenv("VF_RUNSC", str(tmp_path / "no-runsc"))
    monkeypatch.setenv("VF_BWRAP", str(tmp_path / "no-bwrap"))
    with _app(tmp_path, sqlite_template) as client:
        token = _actors(client)
        r = publish(client, token, *Dist(name="smoke-nobox").pair(), name="smoke-nobox")
        assert r.status_code == 201, r.text
        check = _check(client, "smoke-nobox", token)
    assert check["status"] == "skipped"
    assert str(check["reason"]).startswith("no sandbox backend on this machine: no secure sandbox backend")
    assert check["backend"] is None


def test_checks_can_be_turned_off(tmp_path: Path, sqlite_template: Path) -> None:
    with _app(tmp_path, sqlite_template, smoke_checks=False) as client:
        token = _actors(client)
        assert publish(client, token, *Dist(name="smoke-off").pair(), name="smoke-off").status_code == 201
        check = _check(client, "smoke-off", token)
        # Someone else's private environment, or one that does not exist, is a 404 like everywhere.
        assert client.get("/api/v1/environments/alice/nope/versions/0.1.0/smoke-check").status_code == 404
    assert check["status"] == "skipped" and "VF_HUB_SMOKE_CHECKS" in str(check["reason"])


DEPENDENT_SOURCE = b"""import smoke_helper


def load_environment(**kwargs):
    return smoke_helper.load_environment(**kwargs)
"""


@pytest.mark.sandbox
def test_requirements_beyond_the_sdk_come_from_the_hubs_own_index(
    tmp_path: Path, sqlite_template: Path
) -> None:
    port = free_port()
    client = _app(
        tmp_path,
        sqlite_template,
        smoke_backend=smoke_backend(),
        smoke_index_url=f"http://127.0.0.1:{port}/simple/",
    )
    with serve_app(client.app, port) as url:  # type: ignore[arg-type]
        token = _actors(client)
        helper = Dist(name="smoke-helper")
        dependent = Dist(
            name="smoke-dependent",
            dependencies=["verifiers-sdk", "smoke-helper>=0.1"],
            files={"smoke_dependent/__init__.py": DEPENDENT_SOURCE},
        )
        for dist in (helper, dependent):
            wheel, sdist = dist.pair()
            r = httpx.post(
                f"{url}/api/v1/environments/alice/{dist.name}/versions",
                files={"wheel": wheel, "sdist": sdist},
                headers=Actors.auth(token),
                timeout=60,
            )
            assert r.status_code == 201, r.text
        check = _check(client, "smoke-dependent", token)
    assert check["status"] == "passed", check["log"]
    log = str(check["log"])
    # Fetched on the host from this hub's index alone; the SDK (in the base) was not downloaded.
    assert f"--index-url http://127.0.0.1:{port}/simple/" in log and "smoke-helper>=0.1" in log
    assert "Successfully installed smoke-dependent-0.1.0 smoke-helper-0.1.0" in log
    assert "verifiers_sdk-" not in log
