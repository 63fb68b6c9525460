"""Dependency confusion in reverse (issue 24 item 1): nobody may publish a name the upstream index serves
(unless an admin allows it for one owner), nor any name of the SDK's dependency closure (SQLite and
PostgreSQL; a loopback pypiserver stands in for PyPI)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.context import Hub
from hub_server.services.names import allow_name, allowed_names, revoke_name, sdk_dependencies
from hub_server.settings import HubSettings
from hub_server.simple_index import JSON_V1
from hub_server.upstream import Upstream
from tests.hub._dists import Dist
from tests.hub._helpers import run_python
from tests.hub._upstream import Pypiserver, run_pypiserver, write_upstream_packages
from tests.hub.conftest import Actors, publish
from verifiers.clients.local_model import free_port


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pypiserver]:
    root = tmp_path_factory.mktemp("upstream-packages")
    write_upstream_packages(root)  # tinydep 1.0 and shadow-env 99.0
    with run_pypiserver(root) as server:
        yield server


@pytest.fixture
def settings(settings: HubSettings, pypi: Pypiserver) -> HubSettings:
    return settings.model_copy(update={"upstream_index": pypi.url})


def dist(name: str) -> Dist:
    return Dist(name=name, version="99.0.0", dependencies=[], files={f"{name.replace('-', '_')}/__init__.py": (
        b"def load_environment(**kwargs):\n    raise SystemExit('not the real package')\n"
    )})  # fmt: skip


@pytest.mark.parametrize("spelling", ["tinydep", "TinyDep", "TINYDEP"])
def test_a_first_publish_of_a_name_the_upstream_serves_is_refused(
    client: TestClient, actors: Actors, spelling: str
) -> None:
    r = publish(client, actors.bob, *dist("tinydep").pair(), owner="bob", name=spelling)
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert "upstream index" in detail and "dependency confusion" in detail
    assert "vf-hub name allow tinydep --owner bob" in detail
    # Nothing was created: the index still relays the upstream project to everyone.
    doc = client.get("/simple/tinydep/", headers={"Accept": JSON_V1}).json()
    assert [f["filename"] for f in doc["files"]] == ["tinydep-1.0-py3-none-any.whl"]
    assert client.get("/api/v1/environments/bob/tinydep").status_code == 404


@pytest.mark.parametrize("name", ["openai", "httpx", "sympy", "tabulate", "Requests", "numpy", "pip"])
def test_the_sdks_dependency_closure_is_reserved(
    client: TestClient, hub: Hub, actors: Actors, name: str
) -> None:
    # Reserved whatever the upstream says (here: it has none of these), and no admin can allow them.
    r = publish(client, actors.bob, *dist(name.lower()).pair(), owner="bob", name=name)
    assert r.status_code == 409 and "dependency of verifiers-sdk" in r.json()["detail"], r.text
    with pytest.raises(services.HubError, match="reserved"):
        allow_name(hub, name, "bob")


def test_the_reserved_closure_is_the_sdks_installed_requirements_with_every_extra() -> None:
    names = sdk_dependencies()
    # direct requirements, extras (hub, dev, torch), and requirements of requirements
    assert {"aiohttp", "openai", "fastapi", "pytest", "torch", "sympy", "httpcore", "h11"} <= names
    assert "verifiers-sdk" not in names  # the SDK's own name has its own reservation


def test_an_admin_allowance_lets_one_owner_publish_the_name(
    client: TestClient, hub: Hub, actors: Actors, tmp_path: Path
) -> None:
    assert allow_name(hub, "Shadow_Env", "alice") == "shadow-env"
    assert allowed_names(hub) == [("shadow-env", "alice")]
    # bob is still refused: the allowance sets the name aside for alice (the answer a name another owner
    # holds gets, whatever holds it: test_side_channels.py)
    r = publish(client, actors.bob, *dist("shadow-env").pair(), owner="bob", name="shadow-env")
    assert r.status_code == 409 and "belongs to another owner" in r.json()["detail"]
    r = publish(client, actors.alice, *dist("shadow-env").pair(), name="shadow-env")
    assert r.status_code == 201, r.text
    # once the hub owns it, the hub alone answers for it, and later versions need no allowance
    assert revoke_name(hub, "shadow-env") and allowed_names(hub) == []
    later = Dist(name="shadow-env", version="99.0.1", dependencies=[], files=dist("shadow-env").files)
    assert publish(client, actors.alice, *later.pair(), name="shadow-env").status_code == 201
    doc = client.get("/simple/shadow-env/", headers={"Accept": JSON_V1}).json()
    assert all(f["url"].startswith("/files/shadow-env/") for f in doc["files"])


def test_an_upstream_that_cannot_be_asked_refuses_first_publishes(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    hub.upstream = Upstream(f"http://127.0.0.1:{free_port()}/simple/", ttl=300, timeout=2)
    r = publish(client, actors.alice, *Dist().pair())
    assert r.status_code == 503 and "try again later" in r.json()["detail"], r.text
    hub.upstream = Upstream(
        "https://upstream.test/simple/",
        ttl=300,
        timeout=5,
        transport=httpx.MockTransport(lambda _: httpx.Response(500)),
    )
    assert publish(client, actors.alice, *Dist().pair()).status_code == 503
    hub.upstream = Upstream(
        "https://upstream.test/simple/",
        ttl=300,
        timeout=5,
        transport=httpx.MockTransport(lambda _: httpx.Response(404)),
    )
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201  # a name the upstream lacks


def test_vf_hub_name_commands(settings: HubSettings, hub: Hub, actors: Actors, tmp_path: Path) -> None:
    env = {**os.environ, "VF_HUB_DATABASE_URL": settings.resolved_database_url}
    cli = ["-c", "from hub_server.cli import main; main()"]
    out = run_python([*cli, "name", "allow", "TinyDep", "--owner", "alice"], cwd=tmp_path, env=env)
    assert "alice may now publish tinydep" in out
    assert run_python([*cli, "name", "list"], cwd=tmp_path, env=env).split() == ["tinydep", "alice"]
    assert allowed_names(hub) == [("tinydep", "alice")]
    run_python([*cli, "name", "revoke", "tinydep"], cwd=tmp_path, env=env)
    assert allowed_names(hub) == []
