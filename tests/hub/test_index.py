"""The simple index: PEP 503 HTML, PEP 691 JSON, PEP 592/658/700 fields, negotiation and cache invalidation."""

from __future__ import annotations

import hashlib
import re
import time

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from hub_server.simple_index import HTML_V1, JSON_V1, TEXT_HTML, negotiate
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

JSON_ACCEPT = {"Accept": JSON_V1}


@pytest.mark.parametrize(
    ("accept", "fmt", "expected"),
    [
        (None, None, TEXT_HTML),
        ("*/*", None, TEXT_HTML),
        ("text/html", None, TEXT_HTML),
        (JSON_V1, None, JSON_V1),
        (HTML_V1, None, HTML_V1),
        (f"{JSON_V1}, {HTML_V1};q=0.2, text/html;q=0.01", None, JSON_V1),  # what pip sends
        (f"{JSON_V1};q=0.1, text/html", None, TEXT_HTML),
        ("application/json", None, None),
        (f"{JSON_V1};q=0", None, None),
        ("text/html;q=abc", None, None),
        ("image/png", "json", JSON_V1),
        (None, "html", HTML_V1),
        (None, "yaml", None),
    ],
)
def test_negotiate(accept: str | None, fmt: str | None, expected: str | None) -> None:
    assert negotiate(accept, fmt) == expected


def test_project_page_html_and_json(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist(version="0.1.0").pair()).status_code == 201
    newer = Dist(version="0.2.0", requires_python=">=3.11,<4")
    assert publish(client, actors.alice, *newer.pair()).status_code == 201
    client.post(
        "/api/v1/environments/alice/demo-env/versions/0.1.0/yank",
        json={"reason": 'bad "quotes" & <tags>'},
        headers=Actors.auth(actors.alice),
    )

    page = client.get("/simple/demo-env/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["vary"].startswith("Accept")
    assert '<meta name="pypi:repository-version" content="1.1">' in page.text
    wheel = newer.wheel()  # the archives are reproducible, so this is the published wheel
    sha = hashlib.sha256(wheel[1]).hexdigest()
    assert f'href="/files/demo-env/{wheel[0]}#sha256={sha}"' in page.text
    assert 'data-requires-python="&lt;4,&gt;=3.11"' in page.text  # stored normalised
    assert 'data-yanked="bad &quot;quotes&quot; &amp; &lt;tags&gt;"' in page.text
    assert page.text.count("data-yanked") == 2  # the 0.1.0 wheel and sdist
    assert re.search(r'data-core-metadata="sha256=[0-9a-f]{64}"', page.text)

    doc = client.get("/simple/demo-env/", headers=JSON_ACCEPT)
    assert doc.headers["content-type"] == JSON_V1
    body = doc.json()
    assert body["meta"] == {"api-version": "1.1"}
    assert body["name"] == "demo-env" and body["versions"] == ["0.1.0", "0.2.0"]
    files = {f["filename"]: f for f in body["files"]}
    entry = files[wheel[0]]
    assert entry["hashes"] == {"sha256": sha}
    assert entry["size"] == len(wheel[1])
    assert entry["requires-python"] == "<4,>=3.11"
    assert entry["yanked"] is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", entry["upload-time"])
    assert files[Dist().wheel()[0]]["yanked"] == 'bad "quotes" & <tags>'
    # PEP 658: the metadata file is served next to the wheel and its hash matches
    meta = client.get(entry["url"] + ".metadata")
    assert meta.status_code == 200
    assert hashlib.sha256(meta.content).hexdigest() == entry["core-metadata"]["sha256"]
    assert meta.content.startswith(b"Metadata-Version")
    # the download itself
    dl = client.get(entry["url"])
    assert dl.content == wheel[1] and "attachment" in dl.headers["content-disposition"]


def test_root_lists_projects(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    assert publish(client, actors.alice, *Dist(name="math-env").pair(), name="math-env").status_code == 201
    root = client.get("/simple/")
    assert '<a href="/simple/demo-env/">demo-env</a>' in root.text
    assert client.get("/simple/", headers=JSON_ACCEPT).json()["projects"] == [
        {"name": "demo-env"},
        {"name": "math-env"},
        {"name": "verifiers-sdk"},  # the hub serves the SDK itself, so the root lists it
    ]
    assert '<a href="/simple/verifiers-sdk/">verifiers-sdk</a>' in root.text
    # signed in, the listing is rendered per caller: the SDK is still there
    signed_in = client.get("/simple/", headers={**JSON_ACCEPT, **Actors.auth(actors.alice_read)})
    assert {"name": "verifiers-sdk"} in signed_in.json()["projects"]
    assert client.get("/simple/", headers={"Accept": "application/xml"}).status_code == 406


def test_names_are_normalised(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    r = client.get("/simple/Demo_Env/", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/simple/demo-env/"
    r = client.get("/simple/demo-env", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/simple/demo-env/"
    assert client.get("/simple/no-such-project/").status_code == 404


def test_cache_invalidated_on_publish_and_yank(client: TestClient, actors: Actors) -> None:
    assert client.get("/simple/demo-env/").status_code == 404  # a cached miss ...
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    assert client.get("/simple/demo-env/").status_code == 200  # ... is forgotten on publish
    assert "data-yanked" not in client.get("/simple/demo-env/").text
    client.post("/api/v1/environments/alice/demo-env/versions/0.1.0/yank", headers=Actors.auth(actors.alice))
    assert "data-yanked" in client.get("/simple/demo-env/").text
    client.patch(
        "/api/v1/environments/alice/demo-env",
        json={"visibility": "private"},
        headers=Actors.auth(actors.alice),
    )
    assert client.get("/simple/demo-env/").status_code == 404
    assert b"demo-env" not in client.get("/simple/").content


def test_other_workers_see_changes(
    app: FastAPI, settings: HubSettings, client: TestClient, actors: Actors
) -> None:
    """Two apps on one database stand in for two worker processes."""
    with TestClient(create_app(settings)) as other:
        assert other.get("/simple/demo-env/").status_code == 404  # cached as missing in `other`
        assert publish(client, actors.alice, *Dist().pair()).status_code == 201
        deadline = time.monotonic() + 300  # only a guard against a hang
        while other.get("/simple/demo-env/").status_code != 200:
            assert time.monotonic() < deadline, "the other worker never saw the publish"
            time.sleep(0.05)


def test_fast_path_answers_like_the_routes(client: TestClient, hub: Hub, actors: Actors) -> None:
    """The first anonymous GET after a change goes through the routes and fills the cache; the second is
    answered by the FastPath middleware from that cache. Both must be the same response."""
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    index = hub.index
    index.check_generation()  # take the publish's generation now, so the poller clears nothing below
    for path, cached in (
        ("/simple/", lambda: index.cached_root is not None),
        ("/simple/demo-env/", lambda: index.cached_page("demo-env")[0]),
    ):
        for headers in ({}, JSON_ACCEPT, {"Accept": HTML_V1}):
            index.clear()
            slow = client.get(path, headers=headers)
            assert cached(), path
            fast = client.get(path, headers=headers)
            assert slow.status_code == fast.status_code == 200
            assert slow.content == fast.content, (path, headers)
            for name in ("content-type", "vary", "cache-control"):
                assert slow.headers[name] == fast.headers[name], (path, headers, name)
            head = client.head(path, headers=headers)
            assert head.status_code == 200 and head.content == b""
            assert head.headers["content-length"] == str(len(fast.content))
