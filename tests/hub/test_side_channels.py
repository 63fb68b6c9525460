"""Issue 10 §4 and §5: what a reader can learn or inflate without the right to, and bodies that must
not end in a 500 (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select

from hub_server import services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.models import Environment
from hub_server.services.names import allow_name
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish, serve_app

API = "/api/v1"


@contextmanager
def counting_queries(hub: Hub) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(hub.db.engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(hub.db.engine, "before_cursor_execute", count)


def test_absent_and_invisible_take_the_same_path(client: TestClient, hub: Hub, actors: Actors) -> None:
    dist = Dist(name="secret-env")
    assert (
        publish(client, actors.alice, *dist.pair(), name="secret-env", visibility="private").status_code
        == 201
    )
    wheel = dist.wheel()[0]
    pairs = [
        ("/api/v1/environments/alice/{n}", {}),
        ("/api/v1/environments/alice/{n}/versions", {}),
        ("/api/v1/environments/alice/{n}/versions/0.1.0", {}),
        ("/api/v1/environments/alice/{n}/evals", {}),
        ("/api/v1/resolve?spec=alice/{n}", {}),
        ("/api/v1/resolve?spec={n}@==0.1.0", {}),
        ("/files/{n}/" + wheel.replace("secret_env", "{m}"), {}),
        ("/alice/{n}", {}),
    ]
    for who in (None, actors.bob):
        headers = Actors.auth(who) if who else {}
        for template, _ in pairs:
            seen = []
            for name in ("secret-env", "absent-env"):
                url = template.format(n=name, m=name.replace("-", "_"))
                client.get(url, headers=headers)  # warm: the token's last-use write, caches
                with counting_queries(hub) as statements:
                    r = client.get(url, headers=headers)
                assert r.status_code == 404, url
                seen.append(
                    (len(statements), r.text.replace(name, "NAME").replace(name.replace("-", "_"), "NAME"))
                )
            assert seen[0] == seen[1], (template, who, seen)


def test_a_taken_name_gets_one_answer_whatever_holds_it(client: TestClient, hub: Hub, actors: Actors) -> None:
    """Issue 33 item 8: publishing another owner's private name answered 409 "belongs to another owner"
    while every read path said 404, confirming the private environment. A name must still be refused
    (one flat index), so the refusal is the same — status, text and queries — for a private environment,
    a public one and a name an admin set aside for that owner (which no read path shows either)."""
    for name, visibility in (("secret-env", "private"), ("open-env", "public")):
        r = publish(client, actors.alice, *Dist(name=name).pair(), name=name, visibility=visibility)
        assert r.status_code == 201
    allow_name(hub, "held-env", "alice")
    for name in ("secret-env", "held-env"):  # every read path: the same 404 for both
        assert client.get(f"{API}/resolve?spec={name}", headers=Actors.auth(actors.bob)).status_code == 404
    seen = []
    for name in ("secret-env", "held-env", "open-env"):
        pair = Dist(name=name, version="9.0.0").pair()
        publish(client, actors.bob, *pair, owner="bob", name=name)  # warm: the token's last-use write
        with counting_queries(hub) as statements:
            r = publish(client, actors.bob, *pair, owner="bob", name=name)
        assert r.status_code == 409, (name, r.text)
        seen.append((len(statements), r.json()["detail"].replace(name, "NAME")))
    assert seen[0] == seen[1] == seen[2], seen
    assert "belongs to another owner" in seen[0][1] and "rename your package" in seen[0][1]
    # the allowance holds the name for alice alone
    assert publish(client, actors.alice, *Dist(name="held-env").pair(), name="held-env").status_code == 201


def _second_worker(settings: HubSettings) -> TestClient:
    # Another process would build its own app from the same settings: same database, its own caches.
    return TestClient(create_app(settings.model_copy(update={"cache_poll_seconds": 3600.0})))


def test_visibility_changes_reach_every_worker_at_once(
    client: TestClient, settings: HubSettings, actors: Actors
) -> None:
    for name in ("demo-env", "yank-env", "gone-env"):
        assert publish(client, actors.alice, *Dist(name=name).pair(), name=name).status_code == 201
    with _second_worker(settings) as other:
        for name in ("demo-env", "yank-env", "gone-env"):
            for _ in range(2):  # the second answer comes from the other worker's cache
                assert other.get(f"/simple/{name}/").status_code == 200
        assert b"demo-env" in other.get("/simple/").content
        r = client.patch(
            f"{API}/environments/alice/demo-env",
            json={"visibility": "private"},
            headers=Actors.auth(actors.alice),
        )
        assert r.status_code == 200
        assert other.get("/simple/demo-env/").status_code == 404
        assert b"demo-env" not in other.get("/simple/").content
        r = client.post(
            f"{API}/environments/alice/yank-env/versions/0.1.0/yank",
            json={"reason": "broken"},
            headers=Actors.auth(actors.alice),
        )
        assert r.status_code == 200
        assert b'data-yanked="broken"' in other.get("/simple/yank-env/").content
        assert (
            client.delete(f"{API}/environments/alice/gone-env", headers=Actors.auth(actors.root)).status_code
            == 204
        )
        assert other.get("/simple/gone-env/").status_code == 404


def test_readme_images_from_other_hosts_are_not_loaded(client: TestClient, actors: Actors) -> None:
    readme = (
        "# Hi\n\n![tracker](https://evil.example/pixel.png) ![local](docs/shot.png)\n\n"
        '<img src="https://evil.example/raw.png" alt="raw"> <img src="//evil.example/proto.png">\n'
    )
    assert publish(client, actors.alice, *Dist(readme=readme).pair()).status_code == 201
    page = client.get("/alice/demo-env")
    assert page.status_code == 200
    assert '<img src="https://' not in page.text and 'src="//evil' not in page.text
    assert 'href="https://evil.example/pixel.png"' in page.text  # turned into a link
    assert '<img src="docs/shot.png"' in page.text
    csp = dict(p.strip().split(" ", 1) for p in page.headers["content-security-policy"].split(";"))
    assert csp["img-src"] == "'self'"


def test_a_download_loop_counts_once_per_client_and_day(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    sdist = Dist().sdist()[0]
    for _ in range(20):
        assert client.get(f"/files/demo-env/{sdist}").status_code == 200
    assert client.get(f"{API}/environments/alice/demo-env").json()["downloads"] == 1
    for token in (actors.bob, actors.bob, actors.alice_read):
        assert client.get(f"/files/demo-env/{sdist}", headers=Actors.auth(token)).status_code == 200
    assert client.get(f"{API}/environments/alice/demo-env").json()["downloads"] == 3
    with hub.db.read() as s:
        assert s.scalar(select(Environment.download_count)) == 3


@pytest.mark.parametrize("trusted", ["", "127.0.0.1"])
def test_forwarded_for_counts_only_from_a_configured_proxy(settings: HubSettings, trusted: str) -> None:
    """Issue 24 item 19: X-Forwarded-For from loopback made each GET a new client. Served as `vf-hub
    serve` serves (uvicorn with the settings' proxy options), the header is believed only from a proxy the
    admin named; with none (the default), every GET from one peer is one client however it spoofs."""
    app = create_app(settings.model_copy(update={"trusted_proxies": trusted}))
    hub: Hub = app.state.hub
    services.create_user(hub, "alice")
    token = services.create_token(hub, "alice", scopes=["publish"])[0]
    sdist = Dist().sdist()[0]
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert publish(http, token, *Dist().pair()).status_code == 201  # type: ignore[arg-type]
        for n in range(1, 6):
            got = http.get(f"/files/demo-env/{sdist}", headers={"X-Forwarded-For": f"203.0.113.{n}"})
            assert got.status_code == 200
        downloads = http.get(f"{API}/environments/alice/demo-env").json()["downloads"]
    assert downloads == (5 if trusted else 1)


def test_non_finite_json_numbers_are_4xx(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    auth = {**Actors.auth(actors.alice), "Content-Type": "application/json"}
    evals = f"{API}/environments/alice/demo-env/versions/0.1.0/evals"
    bodies = [
        (evals, '{"model": "m", "avg_reward": NaN, "num_examples": 1, "rollouts_per_example": 1}'),
        (evals, '{"model": "m", "avg_reward": Infinity, "num_examples": 1, "rollouts_per_example": 1}'),
        (evals, '{"model": "m", "avg_reward": 1e999, "num_examples": 1, "rollouts_per_example": 1}'),
        (
            evals,
            '{"model": "m", "avg_reward": 0.5, "num_examples": 1, "rollouts_per_example": 1, "pass_at_k": {"1": -Infinity}}',
        ),
        (evals, '{"model": "m", "avg_reward": 0.5, "num_examples": 1e999, "rollouts_per_example": 1}'),
        (f"{API}/tokens", '{"scopes": ["read"], "expires_in_days": NaN}'),
        (f"{API}/environments/alice/demo-env", '{"tags": [NaN], "description": Infinity}'),
    ]
    for url, body in bodies:
        method = "PATCH" if url.endswith("demo-env") else "POST"
        r = client.request(method, url, content=body, headers=auth)
        assert 400 <= r.status_code < 500, (url, body, r.status_code, r.text)
        assert "detail" in r.json()


def test_search_pages_and_caps_summaries(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    with hub.db.write() as s:
        env = s.scalars(select(Environment)).one()
        env.description = "long " * 2000
    page = client.get(f"{API}/environments").json()
    assert len(page["items"][0]["description"]) <= 300
    assert len(client.get(f"{API}/environments/alice/demo-env").json()["description"]) == 10_000
    assert client.get(f"{API}/environments", params={"per_page": 1000}).status_code == 422
