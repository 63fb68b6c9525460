"""The upstream fall-through and the SDK the hub serves itself (SQLite and PostgreSQL).

A loopback pypiserver stands in for PyPI; ``httpx.MockTransport`` upstreams count requests, to prove a name
the hub owns is never looked up upstream."""

from __future__ import annotations

import asyncio
import hashlib
import html
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server import sdk_dist
from hub_server.context import Hub
from hub_server.sdk_dist import SDK_NAME, SdkDist, installed_version
from hub_server.services.names import allow_name
from hub_server.settings import HubSettings
from hub_server.simple_index import JSON_V1
from hub_server.upstream import Upstream
from tests.hub._dists import Dist
from tests.hub._upstream import Pypiserver, run_pypiserver, shared_sdk_cache, write_upstream_packages
from tests.hub.conftest import Actors, publish
from verifiers.clients.local_model import free_port

JSON_ACCEPT = {"Accept": JSON_V1}


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pypiserver]:
    root = tmp_path_factory.mktemp("upstream-packages")
    write_upstream_packages(root)
    with run_pypiserver(root) as server:
        yield server


@pytest.fixture(scope="session")
def sdk_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_sdk_cache(tmp_path_factory)


@pytest.fixture
def settings(settings: HubSettings, pypi: Pypiserver, sdk_cache: Path) -> HubSettings:
    return settings.model_copy(update={"upstream_index": pypi.url, "sdk_cache_dir": sdk_cache})


Handler = Callable[[httpx.Request], httpx.Response]


def mock_upstream(hub: Hub, handler: Handler, *, ttl: float = 300) -> list[str]:
    """Replace the hub's upstream by ``handler``; returns the list of paths it was asked for."""
    seen: list[str] = []

    def counting(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return handler(request)

    hub.upstream = Upstream(
        "https://upstream.test/simple/", ttl=ttl, timeout=5, transport=httpx.MockTransport(counting)
    )
    return seen


UPSTREAM_HTML = (
    '<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.0"></head><body>'
    '<a href="../../packages/pkg-1.0-py3-none-any.whl#sha256=abc" data-requires-python="&gt;=3.8" '
    'data-dist-info-metadata="sha256=def">pkg-1.0-py3-none-any.whl</a>'
    '<a href="https://files.test/pkg-0.9.tar.gz#sha256=123" data-yanked="broken">pkg-0.9.tar.gz</a>'
    "</body></html>"
)


def html_upstream(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/simple/pkg/":
        return httpx.Response(200, text=UPSTREAM_HTML, headers={"Content-Type": "text/html"})
    return httpx.Response(404)


def test_unknown_name_is_relayed_from_the_upstream_in_both_forms(
    client: TestClient, pypi: Pypiserver
) -> None:
    html_page = client.get("/simple/tinydep/")
    assert html_page.status_code == 200 and html_page.headers["content-type"].startswith("text/html")
    wheel = TINY_WHEEL_NAME
    assert f">{wheel}</a>" in html_page.text
    assert f'href="{pypi.url.removesuffix("/simple/")}/' in html_page.text  # absolute, at the upstream
    assert "#sha256=" in html_page.text
    doc = client.get("/simple/tinydep/", headers=JSON_ACCEPT)
    assert doc.headers["content-type"] == JSON_V1
    files = doc.json()["files"]
    assert [f["filename"] for f in files] == [wheel]
    assert files[0]["url"].startswith("http://127.0.0.1:") and "sha256" in files[0]["hashes"]
    got = httpx.get(files[0]["url"])  # the relayed URL really serves the file
    assert hashlib.sha256(got.content).hexdigest() == files[0]["hashes"]["sha256"]
    assert client.get("/simple/no-such-project-anywhere/").status_code == 404


TINY_WHEEL_NAME = "tinydep-1.0-py3-none-any.whl"


def test_html_upstream_is_converted_with_absolute_urls(client: TestClient, hub: Hub) -> None:
    seen = mock_upstream(hub, html_upstream)
    doc = client.get("/simple/pkg/", headers=JSON_ACCEPT).json()
    assert doc["meta"]["api-version"] == "1.0"  # no sizes upstream: not claimed as PEP 700
    wheel, sdist = doc["files"]
    assert wheel["url"] == "https://upstream.test/packages/pkg-1.0-py3-none-any.whl"
    assert wheel["hashes"] == {"sha256": "abc"} and wheel["requires-python"] == ">=3.8"
    assert wheel["core-metadata"] == {"sha256": "def"} and wheel["yanked"] is False
    assert sdist["yanked"] == "broken" and sdist["url"] == "https://files.test/pkg-0.9.tar.gz"
    html_page = client.get("/simple/pkg/").text
    assert 'href="https://upstream.test/packages/pkg-1.0-py3-none-any.whl#sha256=abc"' in html_page
    assert 'data-requires-python="&gt;=3.8"' in html_page and 'data-yanked="broken"' in html_page
    assert seen == ["/simple/pkg/"]  # the second format came from the cache


def test_json_upstream_is_relayed_as_html(client: TestClient, hub: Hub) -> None:
    doc = {
        "meta": {"api-version": "1.1"},
        "name": "pkg",
        "versions": ["2.0"],
        "files": [
            {
                "filename": "pkg-2.0-py3-none-any.whl",
                "url": "/files/pkg-2.0-py3-none-any.whl",
                "hashes": {"sha256": "f00"},
                "size": 10,
                "core-metadata": True,
            }
        ],
    }
    mock_upstream(hub, lambda r: httpx.Response(200, json=doc, headers={"Content-Type": JSON_V1}))
    page = client.get("/simple/pkg/").text
    assert 'href="https://upstream.test/files/pkg-2.0-py3-none-any.whl#sha256=f00"' in page
    assert 'data-core-metadata="true"' in page
    relayed = client.get("/simple/pkg/", headers=JSON_ACCEPT).json()
    assert relayed["versions"] == ["2.0"] and relayed["files"][0]["size"] == 10


def test_a_name_on_the_hub_is_never_looked_up_upstream(
    client: TestClient, hub: Hub, actors: Actors, pypi: Pypiserver
) -> None:
    # The loopback upstream has shadow-env 99.0; an admin let alice publish the name anyway (a first
    # publish of an upstream name is refused otherwise: test_name_rules.py), and then the hub's own 0.1
    # is all the index shows.
    allow_name(hub, "shadow-env", "alice")
    shadow = Dist(name="shadow-env", version="0.1")
    r = publish(client, actors.alice, *shadow.pair(), name="shadow-env")
    assert r.status_code == 201, r.text
    doc = client.get("/simple/shadow-env/", headers=JSON_ACCEPT).json()
    assert [f["url"] for f in doc["files"]] == [
        "/files/shadow-env/shadow_env-0.1-py3-none-any.whl",
        "/files/shadow-env/shadow_env-0.1.tar.gz",
    ]
    seen = mock_upstream(
        hub, lambda r: httpx.Response(200, text=UPSTREAM_HTML, headers={"Content-Type": "text/html"})
    )
    hub.index.clear()
    for headers in ({}, JSON_ACCEPT, Actors.auth(actors.bob)):
        assert client.get("/simple/shadow-env/", headers=headers).status_code == 200
    assert seen == []


def test_a_private_name_is_404_and_never_falls_through(client: TestClient, hub: Hub, actors: Actors) -> None:
    # (published while the upstream lacks the name: a first publish of a name it serves is refused)
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    seen = mock_upstream(
        hub, lambda r: httpx.Response(200, text=UPSTREAM_HTML, headers={"Content-Type": "text/html"})
    )
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.alice_read)).status_code == 200
    assert seen == []  # a caller who may read it gets the hub's page, no upstream lookup
    hub.index.clear()
    for headers in ({}, Actors.auth(actors.bob)):
        r = client.get("/simple/demo-env/", headers=headers)
        assert r.status_code == 404 and b"pkg-1.0" not in r.content  # the upstream's page is never served


def test_upstream_failures_are_502_not_an_empty_page(client: TestClient, hub: Hub) -> None:
    mock_upstream(hub, lambda r: httpx.Response(500))
    r = client.get("/simple/pkg/")
    assert r.status_code == 502 and "HTTP 500" in r.json()["detail"]
    hub.upstream = Upstream(f"http://127.0.0.1:{free_port()}/simple/", ttl=300, timeout=2)
    r = client.get("/simple/pkg/", headers=JSON_ACCEPT)
    assert r.status_code == 502 and "could not be reached" in r.json()["detail"]
    mock_upstream(
        hub,
        lambda r: httpx.Response(
            200, json={"meta": {"api-version": "2.0"}}, headers={"Content-Type": JSON_V1}
        ),
    )
    assert client.get("/simple/pkg/").status_code == 502  # PEP 629: an unknown major version


def test_upstream_pages_and_misses_are_cached_for_the_ttl(
    client: TestClient, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache's clock is driven by the test: a loaded machine cannot expire entries early.
    now = [1000.0]
    monkeypatch.setattr("hub_server.upstream.monotonic", lambda: now[0])
    seen = mock_upstream(hub, html_upstream, ttl=0.3)
    for _ in range(3):
        assert client.get("/simple/pkg/").status_code == 200
        assert client.get("/simple/other/").status_code == 404
    assert seen == ["/simple/pkg/", "/simple/other/"]
    now[0] += 0.35
    assert client.get("/simple/pkg/").status_code == 200
    assert seen[-1] == "/simple/pkg/" and len(seen) == 3


def test_upstream_none_disables_the_fall_through(settings: HubSettings) -> None:
    off = settings.model_copy(update={"upstream_index": "none"})
    assert off.resolved_upstream_index is None
    assert Hub.from_settings(off).upstream is None


def test_credentials_are_not_forwarded_upstream(client: TestClient, hub: Hub, actors: Actors) -> None:
    headers: list[httpx.Headers] = []

    def record(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers)
        return httpx.Response(404)

    mock_upstream(hub, record)
    assert client.get("/simple/pkg/", headers=Actors.auth(actors.alice)).status_code == 404
    assert "authorization" not in headers[0] and "cookie" not in headers[0]


# --- the SDK, served by the hub under its reserved name -----------------------------------------------
@pytest.mark.parametrize("name", ["verifiers-sdk", "Verifiers_SDK"])
def test_the_sdk_name_is_reserved(client: TestClient, actors: Actors, name: str) -> None:
    dist = Dist(name="verifiers-sdk", version="9.9", dependencies=[])
    r = publish(client, actors.alice, *dist.pair(), name=name)
    assert r.status_code == 409 and "reserved" in r.json()["detail"]


def test_the_hub_serves_its_own_sdk(client: TestClient, hub: Hub) -> None:
    seen = mock_upstream(hub, html_upstream)
    version = installed_version()
    doc = client.get(f"/simple/{SDK_NAME}/", headers=JSON_ACCEPT).json()
    assert doc["versions"] == [version]
    names = sorted(f["filename"] for f in doc["files"])
    assert names == [f"verifiers_sdk-{version}-py3-none-any.whl", f"verifiers_sdk-{version}.tar.gz"]
    for f in doc["files"]:
        data = client.get(f["url"]).content
        assert hashlib.sha256(data).hexdigest() == f["hashes"]["sha256"] and len(data) == f["size"]
        assert f["requires-python"] == ">=3.11"
    wheel = next(f for f in doc["files"] if f["filename"].endswith(".whl"))
    meta = client.get(wheel["url"] + ".metadata").content
    assert hashlib.sha256(meta).hexdigest() == wheel["core-metadata"]["sha256"]
    assert b"Name: verifiers-sdk" in meta
    assert 'data-core-metadata="sha256=' in client.get(f"/simple/{SDK_NAME}/").text
    assert client.get(f"/files/{SDK_NAME}/verifiers_sdk-0.0.1.tar.gz").status_code == 404
    assert seen == []  # the hub owns the name: never upstream


def test_sdk_from_a_dist_dir_or_a_clear_503(
    client: TestClient, hub: Hub, sdk_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = mock_upstream(hub, html_upstream)
    hub.sdk = SdkDist(tmp_path / "unused", dist_dir=sdk_cache / installed_version())  # a wheel-installed hub
    assert client.get(f"/simple/{SDK_NAME}/", headers=JSON_ACCEPT).json()["versions"] == [installed_version()]
    monkeypatch.setattr(sdk_dist, "source_tree", lambda: None)
    hub.sdk = SdkDist(tmp_path / "empty")
    r = client.get(f"/simple/{SDK_NAME}/")
    assert r.status_code == 503 and "VF_HUB_SDK_DIST_DIR" in r.json()["detail"]
    assert client.get(f"/files/{SDK_NAME}/verifiers_sdk-{installed_version()}.tar.gz").status_code == 503
    assert seen == []  # still never upstream


async def test_concurrent_misses_share_one_upstream_fetch() -> None:
    seen: list[str] = []

    async def slow(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        await asyncio.sleep(0.05)
        return httpx.Response(200, text=UPSTREAM_HTML, headers={"Content-Type": "text/html"})

    upstream = Upstream(
        "https://upstream.test/simple/", ttl=300, timeout=5, transport=httpx.MockTransport(slow)
    )
    try:
        pages = await asyncio.gather(*(upstream.page("pkg") for _ in range(5)))
    finally:
        await upstream.aclose()
    assert seen == ["/simple/pkg/"] and all(p is pages[0] for p in pages)


# --- issue 24 items 15 and 16 ------------------------------------------------------------------------------
HOSTILE_LINKS = [
    "javascript:alert(document.domain)",
    " javascript:alert(1)",
    "\tjava\nscript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
]


def test_only_http_links_are_relayed_and_index_pages_cannot_run_script(client: TestClient, hub: Hub) -> None:
    anchors = (
        "".join(f'<a href="{html.escape(h)}">pkg-{i}.tar.gz</a>' for i, h in enumerate(HOSTILE_LINKS))
        + '<a href="https://files.test/pkg-9.0.tar.gz#sha256=abc">pkg-9.0.tar.gz</a>'
    )
    files = [{"filename": f"pkg-{i}.tar.gz", "url": h, "hashes": {}} for i, h in enumerate(HOSTILE_LINKS)]
    files.append({"filename": "pkg-9.0.tar.gz", "url": "https://files.test/pkg-9.0.tar.gz", "hashes": {}})

    def upstream(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/simple/pkg/":
            return httpx.Response(
                200, text=f"<html><body>{anchors}</body></html>", headers={"Content-Type": "text/html"}
            )
        if request.url.path == "/simple/jpkg/":
            doc = {"meta": {"api-version": "1.0"}, "name": "jpkg", "files": files}
            return httpx.Response(200, json=doc, headers={"Content-Type": JSON_V1})
        return httpx.Response(404)

    mock_upstream(hub, upstream)
    for name in ("pkg", "jpkg"):
        for headers in ({}, JSON_ACCEPT):
            r = client.get(f"/simple/{name}/", headers=headers)
            assert r.status_code == 200
            text = r.text.lower().replace("\\", "")
            assert "script" not in text and "data:" not in text and "file:" not in text, r.text
            assert "https://files.test/pkg-9.0.tar.gz" in r.text
            csp = r.headers["content-security-policy"]
            assert "sandbox" in csp and "default-src 'none'" in csp
    # the hub's own pages, from the route and from the cached fast path, carry the same policy
    for _ in range(2):
        assert "sandbox" in client.get("/simple/").headers["content-security-policy"]


def test_a_private_name_costs_the_same_upstream_lookup_as_an_absent_one(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    """No timing assertion: the same work is done (the upstream is asked, or its cached answer used, and
    it failing is the same 502), so the time cannot differ by an upstream round trip."""
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    seen = mock_upstream(hub, lambda r: httpx.Response(404))
    assert client.get("/simple/demo-env/").status_code == 404
    assert client.get("/simple/absent-env/").status_code == 404
    assert seen == ["/simple/demo-env/", "/simple/absent-env/"]
    assert client.get("/simple/demo-env/").status_code == 404  # cached, like the absent one
    assert client.get("/simple/absent-env/").status_code == 404
    assert len(seen) == 2
    mock_upstream(hub, lambda r: httpx.Response(503))
    for name in ("demo-env", "absent-env"):
        assert client.get(f"/simple/{name}/").status_code == 502
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.alice_read)).status_code == 200
