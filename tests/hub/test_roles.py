"""Issue 33 item 8: organisation roles are enforced (``auth``'s matrix, docs/hub.md "Roles and read
grants") — a plain member publishes and pushes runs but may not change visibility, yank or share; owners
and admins manage members, owners alone manage owners, an organisation keeps its last owner — members are
removed at once, and a duplicate add is a clear 409, never IntegrityError text (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hub_server import services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish
from tests.hub.test_eval_runs import rollout, run_body

API = "/api/v1"
LAB = f"{API}/environments/lab/demo-env"
MEMBERS = f"{API}/orgs/lab/members"


@pytest.fixture
def team(hub: Hub, actors: Actors) -> dict[str, dict[str, str]]:
    """lab: alice owner (from ``actors``), carol admin, bob member; erin outside. Publish tokens."""
    for user in ("carol", "erin"):
        services.create_user(hub, user)
    services.add_member(hub, "lab", "carol", "admin")
    services.add_member(hub, "lab", "bob")
    tokens = {
        "alice": actors.alice,
        "bob": actors.bob,
        "carol": services.create_token(hub, "carol", scopes=["publish"])[0],
        "erin": services.create_token(hub, "erin", scopes=["publish"])[0],
    }
    return {user: Actors.auth(token) for user, token in tokens.items()}


def test_a_member_publishes_and_pushes_runs_but_changes_nothing_else(
    client: TestClient, actors: Actors, team: dict[str, dict[str, str]]
) -> None:
    bob, carol = team["bob"], team["carol"]
    # a member publishes a private environment of the organisation, and a later version
    assert publish(client, actors.bob, *Dist().pair(), owner="lab", visibility="private").status_code == 201
    assert publish(client, actors.bob, *Dist(version="0.2.0").pair(), owner="lab").status_code == 201
    # ... edits its description and pushes a public run of it
    assert client.patch(LAB, json={"description": "by bob"}, headers=bob).status_code == 200
    content_hash = client.get(LAB, headers=bob).json()["versions"][0]["content_hash"]
    run = client.post(f"{LAB}/runs", json=run_body(content_hash, version="0.2.0"), headers=bob)
    assert run.status_code == 201, run.text
    chunk = {"rollouts": [rollout(0, 0, 1.0)]}
    assert client.post(f"{API}/runs/{run.json()['id']}/rollouts", json=chunk, headers=bob).status_code == 200
    # but may not make it public — not with PATCH, not by publishing with a visibility
    r = client.patch(LAB, json={"visibility": "public"}, headers=bob)
    assert r.status_code == 403, r.text
    assert "only owners and admins of lab may change the visibility of lab/demo-env" in r.json()["detail"]
    r = publish(client, actors.bob, *Dist(version="0.3.0").pair(), owner="lab", visibility="public")
    assert r.status_code == 403 and "only owners and admins of lab" in r.json()["detail"], r.text
    assert client.get("/simple/demo-env/").status_code == 404  # still private
    # may not yank, nor share
    r = client.post(f"{LAB}/versions/0.1.0/yank", json={"reason": "x"}, headers=bob)
    assert r.status_code == 403 and "may yank lab/demo-env" in r.json()["detail"]
    assert client.put(f"{LAB}/grants/erin", headers=bob).status_code == 403
    # an admin may do all of that
    assert client.post(f"{LAB}/versions/0.1.0/yank", json={"reason": "x"}, headers=carol).status_code == 200
    assert client.put(f"{LAB}/grants/erin", headers=carol).status_code == 200
    assert client.patch(LAB, json={"visibility": "public"}, headers=carol).status_code == 200
    assert client.get("/simple/demo-env/").status_code == 200
    # and outsiders still nothing but reads of the public environment
    assert client.patch(LAB, json={"description": "x"}, headers=team["erin"]).status_code == 403
    assert client.patch(LAB, json={"visibility": "private"}, headers=team["erin"]).status_code == 403


def test_a_users_own_namespace_is_theirs_to_manage(client: TestClient, actors: Actors) -> None:
    alice = Actors.auth(actors.alice)
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    assert (
        client.patch(
            f"{API}/environments/alice/demo-env", json={"visibility": "public"}, headers=alice
        ).status_code
        == 200
    )
    assert (
        publish(client, actors.alice, *Dist(version="0.2.0").pair(), visibility="private").status_code == 201
    )
    assert client.get("/simple/demo-env/").status_code == 404


def test_members_are_listed_with_roles_for_members_only(
    client: TestClient, team: dict[str, dict[str, str]], actors: Actors
) -> None:
    r = client.get(MEMBERS, headers=team["bob"])
    assert r.status_code == 200, r.text
    assert r.json() == [
        {"username": "alice", "role": "owner"},
        {"username": "carol", "role": "admin"},
        {"username": "bob", "role": "member"},
    ]
    assert client.get(MEMBERS, headers=team["erin"]).status_code == 403
    assert client.get(MEMBERS, headers=Actors.auth(actors.root)).status_code == 200
    assert client.get(MEMBERS).status_code == 401
    assert client.get(f"{API}/orgs/nowhere/members", headers=team["bob"]).status_code == 404
    assert (
        client.get(f"{API}/orgs/alice/members", headers=team["bob"]).status_code == 404
    )  # a user, not an org


def test_who_may_change_whose_membership(client: TestClient, team: dict[str, dict[str, str]]) -> None:
    # a member may not add anyone
    r = client.put(f"{MEMBERS}/erin", json={"role": "member"}, headers=team["bob"])
    assert r.status_code == 403 and "you are a member" in r.json()["detail"], r.text
    # an admin adds members and admins, but no owners, and does not touch owners
    r = client.put(f"{MEMBERS}/erin", json={"role": "owner"}, headers=team["carol"])
    assert r.status_code == 403 and "only owners of lab" in r.json()["detail"]
    assert client.put(f"{MEMBERS}/erin", json={"role": "admin"}, headers=team["carol"]).status_code == 200
    assert client.put(f"{MEMBERS}/erin", json={}, headers=team["carol"]).json() == {
        "username": "erin",
        "role": "member",
    }
    assert client.put(f"{MEMBERS}/alice", json={"role": "member"}, headers=team["carol"]).status_code == 403
    assert client.delete(f"{MEMBERS}/alice", headers=team["carol"]).status_code == 403
    # an owner makes an owner; the last owner can be neither removed nor demoted
    r = client.put(f"{MEMBERS}/alice", json={"role": "admin"}, headers=team["alice"])
    assert r.status_code == 409 and "last owner of lab" in r.json()["detail"], r.text
    assert client.delete(f"{MEMBERS}/alice", headers=team["alice"]).status_code == 409
    assert client.put(f"{MEMBERS}/carol", json={"role": "owner"}, headers=team["alice"]).status_code == 200
    assert client.put(f"{MEMBERS}/alice", json={"role": "admin"}, headers=team["carol"]).status_code == 200
    # anyone may leave; a bad role is a 422 naming the roles
    assert client.delete(f"{MEMBERS}/bob", headers=team["bob"]).status_code == 204
    r = client.put(f"{MEMBERS}/erin", json={"role": "boss"}, headers=team["carol"])
    assert r.status_code == 422
    roles = [m["role"] for m in client.get(MEMBERS, headers=team["carol"]).json()]
    assert roles == ["owner", "admin", "member"]


def test_a_removed_member_loses_the_namespace_at_once_on_every_worker(
    settings: HubSettings, client: TestClient, actors: Actors, team: dict[str, dict[str, str]]
) -> None:
    assert publish(client, actors.alice, *Dist().pair(), owner="lab", visibility="private").status_code == 201
    hot = [LAB, f"{API}/environments?q=demo", f"{API}/resolve?spec=lab/demo-env"]
    for url in [*hot, "/simple/demo-env/"]:
        for _ in range(2):  # the second answer of a hot read comes from this worker's memory
            assert client.get(url, headers=team["bob"]).status_code == 200, url
    with TestClient(create_app(settings.model_copy(update={"cache_poll_seconds": 3600.0}))) as other:
        assert other.delete(f"{MEMBERS}/bob", headers=team["carol"]).status_code == 204
    for url in [LAB, f"{API}/resolve?spec=lab/demo-env", "/simple/demo-env/"]:
        assert client.get(url, headers=team["bob"]).status_code == 404, url
    assert client.get(f"{API}/environments?q=demo", headers=team["bob"]).json()["total"] == 0
    assert publish(client, actors.bob, *Dist(version="0.2.0").pair(), owner="lab").status_code == 403
    # a demotion takes effect at once too
    assert client.put(f"{LAB}/grants/erin", headers=team["carol"]).status_code == 200
    assert client.put(f"{MEMBERS}/carol", json={"role": "member"}, headers=team["alice"]).status_code == 200
    assert client.delete(f"{LAB}/grants/erin", headers=team["carol"]).status_code == 403


def test_a_duplicate_membership_is_one_clear_409(hub: Hub, actors: Actors) -> None:
    services.add_member(hub, "lab", "bob")
    with pytest.raises(services.HubError) as again:
        services.add_member(hub, "lab", "bob", "admin")
    assert again.value.status_code == 409
    assert again.value.detail == (
        "bob is already a member of lab (role member); change the role with `vf-hub org set-role lab bob ROLE`"
    )
    with pytest.raises(services.HubError, match="listed twice"):
        services.create_org(hub, "twice", ["bob", "Bob"])
    with pytest.raises(services.HubError, match="unknown role 'boss': use one of owner, admin, member"):
        services.add_member(hub, "lab", "root", "boss")
    with pytest.raises(services.HubError, match="organisation 'alice' does not exist"):
        services.add_member(hub, "alice", "bob")


def _vf_hub(settings: HubSettings, tmp_path: Path, *args: str, ok: bool = True) -> str:
    """``vf-hub ARGS`` (its server side) on the test's database: stdout, or stderr when ``ok`` is False."""
    env = {**os.environ, "VF_HUB_DATABASE_URL": settings.resolved_database_url}
    done = subprocess.run(
        [sys.executable, "-c", "from hub_server.cli import main; main()", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode == 0) == ok, done.stdout + done.stderr
    return done.stdout if ok else done.stderr


def test_vf_hub_org_commands(settings: HubSettings, hub: Hub, actors: Actors, tmp_path: Path) -> None:
    services.create_user(hub, "carol")
    out = _vf_hub(settings, tmp_path, "org", "add-member", "lab", "carol", "--role", "admin")
    assert out.strip() == "carol is now an admin of lab"
    duplicate = _vf_hub(settings, tmp_path, "org", "add-member", "lab", "carol", ok=False)
    assert duplicate.strip().splitlines() == [
        "vf-hub: error: carol is already a member of lab (role admin); change the role with "
        "`vf-hub org set-role lab carol ROLE`"
    ]
    assert "IntegrityError" not in duplicate and "Traceback" not in duplicate
    listed = _vf_hub(settings, tmp_path, "org", "members", "lab").splitlines()
    assert [line.split() for line in listed] == [["USER", "ROLE"], ["alice", "owner"], ["carol", "admin"]]
    assert _vf_hub(settings, tmp_path, "org", "set-role", "lab", "carol", "owner").strip() == (
        "carol is now an owner of lab"
    )
    assert _vf_hub(settings, tmp_path, "org", "remove-member", "lab", "alice").strip() == (
        "alice is no longer a member of lab"
    )
    last = _vf_hub(settings, tmp_path, "org", "remove-member", "lab", "carol", ok=False)
    assert "carol is the last owner of lab" in last and "Traceback" not in last
    assert [line.split() for line in _vf_hub(settings, tmp_path, "org", "members", "lab").splitlines()] == [
        ["USER", "ROLE"],
        ["carol", "owner"],
    ]
