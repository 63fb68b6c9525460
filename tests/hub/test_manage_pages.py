"""Issue 32 item 2 / issue 33 item 8 in the web UI: an environment's settings page (visibility, read
grants) and an organisation's members page — server-rendered forms with the session's CSRF token, the
same role rules as the API, one-line refusals on the page (SQLite and PostgreSQL). The browser half is
tests/hub/browser/test_manage_pages.py."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from hub_server import schemas, services
from hub_server.context import Hub
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish
from tests.hub.test_web_sessions import sign_in

SETTINGS = "/alice/demo-env/settings"


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page[:500]
    return found.group(1)


def test_the_settings_page_toggles_visibility_and_shares(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    assert client.get(SETTINGS, follow_redirects=False).headers["location"] == "/login"  # signed out
    sign_in(client, actors.alice)
    env_page = client.get("/alice/demo-env").text
    assert f'href="{SETTINGS}"' in env_page
    assert "--index-url http://testserver/simple/" not in env_page  # a private page shows the token form
    assert "pip install --index-url http://__token__:&lt;token&gt;@testserver/simple/ demo-env" in env_page
    page = client.get(SETTINGS)
    assert page.status_code == 200 and "Shared with no one" in page.text
    token = _csrf(page.text)
    # without the form token nothing happens
    assert client.post(f"{SETTINGS}/grants", data={"username": "bob"}).status_code == 403
    assert (
        client.post(
            f"{SETTINGS}/grants", data={"username": "bob", "csrf": token}, follow_redirects=False
        ).status_code
        == 303
    )
    page = client.get(SETTINGS).text
    assert 'id="grant-bob"' in page and "Shared with no one" not in page
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.bob)).status_code == 200
    refused = client.post(f"{SETTINGS}/grants", data={"username": "nobody", "csrf": token})
    assert refused.status_code == 404 and "user &#39;nobody&#39; does not exist" in refused.text
    assert 'value="nobody"' in refused.text  # the form keeps what was typed
    done = client.post(f"{SETTINGS}/grants/bob/remove", data={"csrf": token}, follow_redirects=False)
    assert done.status_code == 303
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.bob)).status_code == 404
    done = client.post(
        f"{SETTINGS}/visibility", data={"visibility": "public", "csrf": token}, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"] == SETTINGS
    assert client.get("/simple/demo-env/").status_code == 200
    assert "Make private" in client.get(SETTINGS).text


def test_the_settings_page_is_for_owners_and_admins(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), owner="lab", visibility="private").status_code == 201
    services.add_member(hub, "lab", "bob")
    sign_in(client, actors.bob)
    assert "/lab/demo-env/settings" not in client.get("/lab/demo-env").text  # a member sees no link
    page = client.get("/lab/demo-env/settings")
    assert page.status_code == 403 and "only owners and admins of lab" in page.text
    token = _csrf(client.get("/account").text)
    posted = client.post("/lab/demo-env/settings/visibility", data={"visibility": "public", "csrf": token})
    assert posted.status_code == 403
    detail = client.get("/api/v1/environments/lab/demo-env", headers=Actors.auth(actors.root)).json()
    assert detail["visibility"] == "private"
    services.create_user(hub, "erin")
    client.cookies.clear()
    sign_in(client, services.create_token(hub, "erin", scopes=["publish"])[0])
    assert client.get("/lab/demo-env/settings").status_code == 404  # may not even read it


def test_the_members_page(client: TestClient, hub: Hub, actors: Actors) -> None:
    services.create_user(hub, "carol")
    services.add_member(hub, "lab", "bob")
    sign_in(client, actors.alice)
    account = client.get("/account").text
    assert 'href="/account/orgs/lab"' in account and "owner" in account
    page = client.get("/account/orgs/lab")
    assert page.status_code == 200 and 'id="member-alice"' in page.text and 'id="member-bob"' in page.text
    token = _csrf(page.text)
    added = client.post(
        "/account/orgs/lab/members",
        data={"username": "carol", "role": "admin", "csrf": token},
        follow_redirects=False,
    )
    assert added.status_code == 303
    twice = client.post("/account/orgs/lab/members", data={"username": "carol", "csrf": token})
    assert twice.status_code == 409 and "carol is already a member of lab (role admin)" in twice.text
    changed = client.post(
        "/account/orgs/lab/members/bob/role", data={"role": "admin", "csrf": token}, follow_redirects=False
    )
    assert changed.status_code == 303
    last = client.post("/account/orgs/lab/members/alice/remove", data={"csrf": token})
    assert last.status_code == 409 and "last owner of lab" in last.text
    removed = client.post(
        "/account/orgs/lab/members/bob/remove", data={"csrf": token}, follow_redirects=False
    )
    assert removed.status_code == 303
    assert [(m.username, m.role) for m in _members(hub)] == [("alice", "owner"), ("carol", "admin")]
    # a member sees the list but no forms; someone outside sees nothing
    client.cookies.clear()
    services.add_member(hub, "lab", "bob")
    sign_in(client, actors.bob)
    page = client.get("/account/orgs/lab").text
    assert 'action="/account/orgs/lab/members"' not in page and "Leave" in page and "/role" not in page
    left = client.post(
        "/account/orgs/lab/members/bob/remove", data={"csrf": _csrf(page)}, follow_redirects=False
    )
    assert left.status_code == 303 and left.headers["location"] == "/account"
    assert client.get("/account/orgs/lab").status_code == 403


def _members(hub: Hub) -> list[schemas.MemberOut]:
    with hub.db.read() as session:
        return services.list_members(session, None, "lab")


def test_the_account_page_lists_what_is_shared_with_you(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    sign_in(client, actors.bob)
    assert "No private environment is shared with you" in client.get("/account").text
    services.share(hub, hub.principal(actors.alice), "alice", "demo-env", "bob")
    account = client.get("/account").text
    assert 'href="/alice/demo-env"' in account.split("Shared with you")[1].split("Organisations")[0]
