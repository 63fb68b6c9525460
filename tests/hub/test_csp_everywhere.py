"""Every HTML page the hub serves carries the strict Content-Security-Policy (the web UI's, with its sibling
headers; the package index's pages a stricter one that runs nothing):
the pages are found by walking the app's routes, not listed, so a new page is covered the day it lands.
Each is requested signed out and signed in, with real values and with values that 404 (an error page is a
page too)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from hub_server.auth import COOKIE_NAME
from hub_server.context import Hub
from hub_server.routers.web import CSP, SECURITY_HEADERS
from hub_server.simple_index import CSP as INDEX_CSP
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish, web_session

#: Path parameters filled with what the seeded hub holds, and with what it does not.
REAL = {
    "owner": "alice",
    "name": "demo-env",
    "version": "0.1.0",
    "path": "demo_env/__init__.py",
    "org": "lab",
    "run_id": "1",
    "example_id": "0",
    "rollout_index": "0",
    "project": "demo-env",
    "filename": "missing.whl",
}
MISSING = {key: "zz-nothing" for key in REAL} | {"example_id": "99", "rollout_index": "99", "run_id": "999"}


def get_routes(routes: list[Any], prefix: str = "") -> Iterator[str]:
    """The path of every GET route, included routers' prefixes applied."""
    for route in routes:
        if hasattr(route, "original_router"):  # an included router (FastAPI keeps the original inside)
            yield from get_routes(route.original_router.routes, prefix + (route.include_context.prefix or ""))
        elif hasattr(route, "routes") and not hasattr(route, "methods"):
            yield from get_routes(route.routes, prefix + getattr(route, "path", ""))
        elif "GET" in (getattr(route, "methods", None) or ()):
            yield prefix + route.path


def fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], path)


def test_every_html_page_has_the_csp(app: FastAPI, client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    paths = sorted(set(get_routes(app.routes)))
    assert "/{owner}/{name}" in paths and "/docs" in paths, paths  # the walk sees the web routers
    cookie = web_session(hub, actors.alice)
    html_pages = 0
    for path in [*paths, "/no/such/page/at/all"]:
        for values in (REAL, MISSING):
            url = fill(path, values)
            for cookies in ({}, {COOKIE_NAME: cookie}):
                client.cookies.clear()
                client.cookies.update(cookies)
                resp = client.get(url, headers={"Accept": "text/html"}, follow_redirects=False)
                if not resp.headers.get("content-type", "").startswith("text/html"):
                    continue
                html_pages += 1
                where = f"GET {url} ({'signed in' if cookies else 'signed out'}) -> {resp.status_code}"
                if url.startswith("/simple/"):
                    assert resp.headers.get("content-security-policy") == INDEX_CSP, where
                    continue
                assert resp.headers.get("content-security-policy") == CSP, where
                for header, value in SECURITY_HEADERS.items():
                    assert resp.headers.get(header) == value, f"{where}: {header}"
    client.cookies.clear()
    assert html_pages >= 30, html_pages
