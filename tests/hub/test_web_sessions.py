"""Issue 24 item 17: the web cookie is a per-sign-in session id, not the API token.

So each sign-in has its own cookie and CSRF form token, the cookie is refused as a token (and a token is
refused as the cookie), logging out ends the session on the server (the cookie replayed signs nobody in),
and revoking or expiring the token ends the sessions it signed in. Each test goes through the login form
as a browser does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import update

from hub_server import csrf, services
from hub_server.auth import COOKIE_NAME, hash_token
from hub_server.context import Hub
from hub_server.models import ApiToken, utcnow
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish

API = "/api/v1"
PRIVATE = "/alice/demo-env"  # published private by ``private_env``


def sign_in(client: TestClient, token: str) -> str:
    """Sign ``client`` in with ``token`` through the login form; the session cookie it was given."""
    form = client.get("/login")
    login = client.post(
        "/login", data={"token": token, "csrf": form.cookies[csrf.LOGIN_COOKIE]}, follow_redirects=False
    )
    assert login.status_code == 303, login.text
    return str(login.cookies[COOKIE_NAME])


def page_csrf(client: TestClient) -> str:
    """The CSRF form token the account page carries for the client's session."""
    found = re.search(r'name="csrf" value="([^"]*)"', client.get("/account").text)
    assert found is not None
    return found.group(1)


def with_cookie(client: TestClient, cookie: str) -> TestClient:
    client.cookies.clear()
    client.cookies.set(COOKIE_NAME, cookie)
    return client


def signed_out(client: TestClient) -> bool:
    """The browser is treated as signed out: /account sends it to /login, a private page is not found."""
    account = client.get("/account", follow_redirects=False)
    return (
        account.status_code == 303
        and account.headers["location"] == "/login"
        and client.get(PRIVATE).status_code == 404
        and client.get(f"{API}/environments?q=demo").json()["total"] == 0
    )


@pytest.fixture
def private_env(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201


@pytest.fixture
def other(app: FastAPI) -> Iterator[TestClient]:
    """A second browser on the same hub."""
    with TestClient(app) as c:
        yield c


def test_each_sign_in_is_its_own_session(
    client: TestClient, other: TestClient, actors: Actors, private_env: None
) -> None:
    first = sign_in(client, actors.alice)
    second = sign_in(other, actors.alice)
    assert first.startswith("vfs_") and second.startswith("vfs_")
    assert len({first, second, actors.alice}) == 3  # neither cookie is the API token
    assert page_csrf(client) != page_csrf(other)  # and each session has its own form token
    assert page_csrf(client) and actors.alice not in client.get("/account").text
    for browser in (client, other):
        assert browser.get(PRIVATE).status_code == 200
        assert browser.get(f"{API}/whoami").json()["username"] == "alice"


def test_the_cookie_is_not_an_api_token_nor_the_token_a_cookie(
    client: TestClient, other: TestClient, actors: Actors, private_env: None
) -> None:
    cookie = sign_in(client, actors.alice)
    as_bearer = other.get(f"{API}/whoami", headers=Actors.auth(cookie))
    assert as_bearer.status_code == 401 and "web session" in as_bearer.json()["detail"]
    assert other.get(PRIVATE, headers=Actors.auth(cookie)).status_code == 401
    assert other.get(f"{API}/environments?q=demo", headers=Actors.auth(cookie)).status_code == 401
    assert other.get("/simple/demo-env/", headers=Actors.auth(cookie)).status_code == 401
    # nor is it taken at the login form, which wants an API token
    form = other.get("/login")
    refused = other.post("/login", data={"token": cookie, "csrf": form.cookies[csrf.LOGIN_COOKIE]})
    assert refused.status_code == 401
    # an API token put in the cookie (what the cookie held before web sessions) signs nobody in
    assert signed_out(with_cookie(other, actors.alice))


def test_logging_out_ends_the_session_on_the_server(
    client: TestClient, other: TestClient, actors: Actors, private_env: None
) -> None:
    cookie = sign_in(client, actors.alice)
    kept = sign_in(other, actors.alice)  # another browser of the same user stays signed in
    assert client.get(f"{API}/environments?q=demo").json()["total"] == 1  # the hot read caches the caller
    out = client.post("/logout", data={"csrf": page_csrf(client)}, follow_redirects=False)
    assert out.status_code == 303
    assert signed_out(with_cookie(client, cookie))  # the cookie replayed: signed out, even from the caches
    assert client.get(f"{API}/whoami").status_code == 401
    assert not signed_out(with_cookie(other, kept))


def test_revoking_the_token_ends_its_web_sessions(
    client: TestClient, other: TestClient, hub: Hub, actors: Actors, private_env: None
) -> None:
    cookies = [sign_in(client, actors.alice), sign_in(other, actors.alice)]
    assert client.get(f"{API}/environments?q=demo").json()["total"] == 1
    token_id = hub.principal(actors.alice).token_id
    assert client.delete(f"{API}/tokens/{token_id}", headers=Actors.auth(actors.alice)).status_code == 204
    for browser, cookie in zip((client, other), cookies, strict=True):
        assert signed_out(with_cookie(browser, cookie))
    # revoking from the account page signs that browser out too (and the session with it)
    read_cookie = sign_in(client, actors.alice_read)
    read_id = hub.principal(actors.alice_read).token_id
    revoked = client.post(
        f"/account/tokens/{read_id}/revoke", data={"csrf": page_csrf(client)}, follow_redirects=False
    )
    assert revoked.status_code == 303 and revoked.headers["location"] == "/login"
    assert signed_out(with_cookie(client, read_cookie))


def test_an_expired_tokens_sessions_stop_working(
    client: TestClient, hub: Hub, actors: Actors, private_env: None
) -> None:
    short = services.create_token(hub, "alice", scopes=["read"], expires_in=timedelta(days=2))[0]
    cookie = sign_in(client, short)
    assert client.get(PRIVATE).status_code == 200
    with hub.db.write() as session:
        session.execute(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(short))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert signed_out(with_cookie(client, cookie))


def test_an_old_sessions_csrf_token_is_refused_for_a_new_session(client: TestClient, actors: Actors) -> None:
    old_cookie = sign_in(client, actors.alice)
    old = page_csrf(client)
    new_cookie = sign_in(client, actors.alice)  # signing in again in the same browser
    assert new_cookie != old_cookie and page_csrf(client) != old
    assert client.post("/account/tokens", data={"csrf": old, "name": "x"}).status_code == 403
    made = client.post("/account/tokens", data={"csrf": page_csrf(client), "name": "y", "scope": "read"})
    assert made.status_code == 200 and "vfh_" in made.text
    assert client.post("/logout", data={"csrf": old}).status_code == 403
    # the browser's previous session ended when it signed in again
    assert signed_out(with_cookie(client, old_cookie))


def test_a_session_is_stored_as_a_hash_and_lives_no_longer_than_its_token(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    from sqlalchemy import select

    from hub_server.models import WebSession

    week = services.create_token(hub, "alice", scopes=["read"], expires_in=timedelta(days=7))[0]
    short_cookie = sign_in(client, week)
    client.cookies.clear()
    login = client.get("/login")
    done = client.post(
        "/login",
        data={"token": actors.alice, "csrf": login.cookies[csrf.LOGIN_COOKIE]},
        follow_redirects=False,
    )
    max_age = int(re.search(r"Max-Age=(\d+)", done.headers["set-cookie"]).group(1))  # type: ignore[union-attr]
    assert 29 * 86400 < max_age <= 30 * 86400  # a token that never expires: a 30-day session
    with hub.db.read() as session:
        rows = {r.secret_hash: r for r in session.scalars(select(WebSession))}
        short = rows[hash_token(short_cookie)]
        long = rows[hash_token(done.cookies[COOKIE_NAME])]
        assert short_cookie not in {r.secret_hash for r in rows.values()}
        assert short.expires_at <= short.token.expires_at  # type: ignore[operator]
        assert long.expires_at <= utcnow() + timedelta(days=30) and long.ended_at is None
