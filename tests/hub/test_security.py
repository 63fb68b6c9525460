"""Who may do what, what stays invisible, and what an upload may never leave behind (SQLite and PostgreSQL)."""

from __future__ import annotations

import base64
import random
import threading
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from hub_server import services
from hub_server.auth import COOKIE_NAME
from hub_server.context import Hub
from hub_server.models import File, Version
from hub_server.services import publishing
from tests.hub._dists import Dist, tar_link
from tests.hub.conftest import Actors, LiveHub, publish, web_session


def blob_files(hub: Hub) -> list[str]:
    return sorted(hub.blobs.iter_keys())


def counts(hub: Hub) -> tuple[int, int]:
    with hub.db.read() as s:
        return s.scalar(select(func.count()).select_from(Version)) or 0, s.scalar(
            select(func.count()).select_from(File)
        ) or 0


def assert_nothing_stored(hub: Hub) -> None:
    assert counts(hub) == (0, 0)
    assert blob_files(hub) == []


# --- authentication and authorisation --------------------------------------------------------------------
def test_publish_needs_a_token(client: TestClient, hub: Hub, actors: Actors) -> None:
    r = publish(client, None, *Dist().pair())
    assert r.status_code == 401
    assert "publish scope" in r.json()["detail"]
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert_nothing_stored(hub)


def test_bad_expired_and_revoked_tokens(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, "vfh_not-a-token", *Dist().pair()).status_code == 401
    expired, _ = services.create_token(hub, "alice", scopes=["publish"], expires_in=timedelta(seconds=-1))
    r = publish(client, expired, *Dist().pair())
    assert r.status_code == 401 and "expired" in r.json()["detail"]
    token, row = services.create_token(hub, "alice", scopes=["publish"])
    services.revoke_token(hub, row.id)
    r = publish(client, token, *Dist().pair())
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    # a bad token is refused even where no token is needed, rather than silently ignored
    assert client.get("/api/v1/environments", headers=Actors.auth("vfh_nope")).status_code == 401
    assert client.get("/simple/", headers=Actors.auth("vfh_nope")).status_code == 401
    assert_nothing_stored(hub)


def test_tokens_are_stored_hashed(hub: Hub, actors: Actors) -> None:
    from hub_server.models import ApiToken

    with hub.db.read() as s:
        stored = [(t.token_hash, t.prefix) for t in s.scalars(select(ApiToken))]
    for value in (actors.alice, actors.bob, actors.root):
        assert all(value not in h for h, _ in stored)
        assert all(len(h) == 64 for h, _ in stored)


def test_read_token_cannot_publish(client: TestClient, hub: Hub, actors: Actors) -> None:
    r = publish(client, actors.alice_read, *Dist().pair())
    assert r.status_code == 403 and "publish scope" in r.json()["detail"]
    assert_nothing_stored(hub)


def test_cannot_publish_into_another_namespace(client: TestClient, hub: Hub, actors: Actors) -> None:
    r = publish(client, actors.bob, *Dist().pair(), owner="alice")
    assert r.status_code == 403 and "may not publish to the namespace 'alice'" in r.json()["detail"]
    r = publish(client, actors.bob, *Dist().pair(), owner="lab")  # bob is not in org lab
    assert r.status_code == 403
    assert publish(client, actors.alice, *Dist().pair(), owner="nobody").status_code == 404
    assert_nothing_stored(hub)


def test_org_members_publish_to_the_org(client: TestClient, actors: Actors) -> None:
    r = publish(client, actors.alice, *Dist().pair(), owner="lab")
    assert r.status_code == 201, r.text
    assert r.json()["environment"] == "lab/demo-env"


def test_distribution_name_belongs_to_its_first_owner(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    r = publish(client, actors.bob, *Dist(version="0.2.0").pair(), owner="bob")
    assert r.status_code == 409
    assert "belongs to another owner" in r.json()["detail"]
    # other spellings normalise to the same distribution name
    r = publish(
        client, actors.bob, *Dist(name="Demo_Env", version="0.3.0").pair(), owner="bob", name="Demo_Env"
    )
    assert r.status_code == 409
    assert counts(hub) == (1, 2)


def test_only_the_owner_yanks_and_only_admins_delete(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    base = "/api/v1/environments/alice/demo-env"
    assert client.post(f"{base}/versions/0.1.0/yank", json={}).status_code == 401
    assert (
        client.post(f"{base}/versions/0.1.0/yank", json={}, headers=Actors.auth(actors.bob)).status_code
        == 403
    )
    assert (
        client.post(f"{base}/versions/0.1.0/yank", headers=Actors.auth(actors.alice_read)).status_code == 403
    )
    assert client.delete(base, headers=Actors.auth(actors.alice)).status_code == 403
    assert client.delete(base, headers=Actors.auth(actors.root)).status_code == 204
    assert_nothing_stored(hub)


def test_admin_scope_needs_an_admin_user(client: TestClient, hub: Hub, actors: Actors) -> None:
    with pytest.raises(services.HubError, match="not a hub admin"):
        services.create_token(hub, "alice", scopes=["admin"])
    # nor can a token mint a token with more scopes than itself
    r = client.post("/api/v1/tokens", json={"scopes": ["publish"]}, headers=Actors.auth(actors.alice_read))
    assert r.status_code == 403


def test_cookie_is_not_accepted_for_writes(client: TestClient, hub: Hub, actors: Actors) -> None:
    client.cookies.set(COOKIE_NAME, web_session(hub, actors.alice))
    r = publish(client, None, *Dist().pair())
    assert r.status_code == 401  # a cross-site form post cannot publish with the victim's cookie
    assert_nothing_stored(hub)
    assert client.get("/api/v1/whoami").json()["username"] == "alice"  # reads do use it


# --- private environments -------------------------------------------------------------------------------
def test_private_environment_is_invisible(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    wheel = Dist().wheel()[0]
    urls = [
        "/api/v1/environments/alice/demo-env",
        "/api/v1/environments/alice/demo-env/versions",
        "/api/v1/environments/alice/demo-env/versions/0.1.0",
        "/api/v1/environments/alice/demo-env/versions/0.1.0/files",
        "/api/v1/resolve?spec=alice/demo-env",
        "/api/v1/resolve?spec=demo-env@==0.1.0",
        "/simple/demo-env/",
        f"/files/demo-env/{wheel}",
        f"/files/demo-env/{wheel}.metadata",
        "/alice/demo-env",
    ]
    for who in (None, actors.bob):
        headers = Actors.auth(who) if who else {}
        for url in urls:
            assert client.get(url, headers=headers).status_code == 404, (who, url)
        assert client.get("/api/v1/environments", headers=headers).json()["total"] == 0
        assert client.get("/api/v1/environments?q=demo", headers=headers).json()["items"] == []
        assert b"demo-env" not in client.get("/simple/", headers=headers).content
        assert "demo-env" not in client.get("/", headers=headers).text
        assert client.put("/api/v1/environments/alice/demo-env/star", headers=headers).status_code in (
            401,
            404,
        )
    # the owner sees it everywhere, with a read token, a publish token, pip's Basic form or the cookie
    basic = "Basic " + base64.b64encode(f"__token__:{actors.alice_read}".encode()).decode()
    for headers in (Actors.auth(actors.alice_read), Actors.auth(actors.alice), {"Authorization": basic}):
        for url in urls:
            assert client.get(url, headers=headers).status_code == 200, (headers, url)
        assert b"demo-env" in client.get("/simple/", headers=headers).content
    client.cookies.set(COOKIE_NAME, web_session(hub, actors.alice_read))
    assert client.get("/alice/demo-env").status_code == 200
    assert "demo-env" in client.get("/").text


def test_private_org_environment_visible_to_members_only(
    client: TestClient, hub: Hub, actors: Actors
) -> None:
    assert publish(client, actors.alice, *Dist().pair(), owner="lab", visibility="private").status_code == 201
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.bob)).status_code == 404
    services.add_member(hub, "lab", "bob")
    # bob's existing token picks the membership up (namespaces are read per request)
    assert client.get("/simple/demo-env/", headers=Actors.auth(actors.bob)).status_code == 200


# --- what uploads may not do ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra",
    [
        [("demo_env-0.1.0/../../escape.py", b"x")],
        [tar_link("demo_env-0.1.0/demo_env/passwd.py", "/etc/passwd")],
        [tar_link("demo_env-0.1.0/demo_env/up.py", "../../../etc/passwd")],
    ],
    ids=["traversal", "symlink-absolute", "symlink-relative"],
)
def test_malicious_sdist_rejected_and_nothing_stored(
    client: TestClient, hub: Hub, actors: Actors, extra
) -> None:  # type: ignore[no-untyped-def]
    d = Dist()
    r = publish(client, actors.alice, d.wheel(), d.sdist(extra=extra))
    assert r.status_code == 400
    assert "member" in r.json()["detail"]
    assert_nothing_stored(hub)


def test_malicious_wheel_rejected(client: TestClient, hub: Hub, actors: Actors) -> None:
    d = Dist()
    r = publish(client, actors.alice, d.wheel(extra={"../../escape.py": b"x"}), d.sdist())
    assert r.status_code == 400 and "'..'" in r.json()["detail"]
    assert_nothing_stored(hub)


def test_mismatched_name_or_version_rejected(client: TestClient, hub: Hub, actors: Actors) -> None:
    d = Dist()
    r = publish(client, actors.alice, d.wheel(), Dist(version="0.2.0").sdist())
    assert r.status_code == 400 and "versions do not agree" in r.json()["detail"]
    r = publish(client, actors.alice, d.wheel(), Dist(name="other-env").sdist())
    assert r.status_code == 400 and "names do not agree" in r.json()["detail"]
    r = publish(client, actors.alice, *Dist(name="other-env").pair(), name="demo-env")
    assert r.status_code == 400 and "the URL: demo-env" in r.json()["detail"]
    assert_nothing_stored(hub)


def test_oversize_upload_rejected(client: TestClient, hub: Hub, actors: Actors) -> None:
    noise = random.Random(0).randbytes(300 * 1024)  # incompressible, over max_file_size (256 KiB)
    big = Dist(files={"demo_env/__init__.py": b"def load_environment(): ...\n", "demo_env/x.bin": noise})
    r = publish(client, actors.alice, *big.pair())
    assert r.status_code == 413, r.text
    assert "max_file_size" in r.json()["detail"]
    # a body beyond the request limit is refused by Content-Length, before it is read
    huge = b"\0" * (2 * hub.settings.max_file_size + 2 * 1024 * 1024)
    r = client.post(
        "/api/v1/environments/alice/demo-env/versions",
        files={"wheel": ("demo_env-0.1.0-py3-none-any.whl", huge), "sdist": ("demo_env-0.1.0.tar.gz", b"x")},
        headers=Actors.auth(actors.alice),
    )
    assert r.status_code == 413
    assert_nothing_stored(hub)


def test_duplicate_version_conflicts_whatever_the_bytes(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    before = blob_files(hub)
    r = publish(client, actors.alice, *Dist().pair())
    assert r.status_code == 409 and "immutable" in r.json()["detail"]
    changed = Dist(files={"demo_env/__init__.py": b"def load_environment(**kw):\n    return 2\n"})
    assert publish(client, actors.alice, *changed.pair()).status_code == 409
    assert (
        publish(client, actors.alice, *Dist(version="0.1").pair()).status_code == 409
    )  # same PEP 440 version
    assert blob_files(hub) == before and counts(hub) == (1, 2)


def test_concurrent_publishes_race_in_the_database(hub: Hub, actors: Actors, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """All attempts pass validation and write their blobs before any inserts; exactly one wins."""
    from hub_server.auth import authenticate

    n = 4
    barrier = threading.Barrier(n, timeout=300)
    real_insert = publishing._insert_version

    def synchronised_insert(*args, **kwargs):  # type: ignore[no-untyped-def]
        barrier.wait()
        return real_insert(*args, **kwargs)

    monkeypatch.setattr(publishing, "_insert_version", synchronised_insert)
    with hub.db.read() as s:
        principal, _ = authenticate(s, actors.alice)
    results: list[int | str] = []

    def attempt(i: int) -> None:
        src = f"def load_environment(**kw):\n    return {i}\n".encode()  # different bytes each time
        wheel, sdist = Dist(files={"demo_env/__init__.py": src}).pair()
        try:
            services.publish(
                hub, principal, "alice", "demo-env", services.Upload(*wheel), services.Upload(*sdist)
            )
            results.append("ok")
        except services.HubError as exc:
            results.append(exc.status_code)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(results, key=str) == [409] * (n - 1) + ["ok"]
    assert counts(hub) == (1, 2)
    with hub.db.read() as s:
        referenced = sorted(s.scalars(select(File.blob_key)))
    assert blob_files(hub) == referenced  # no orphan blobs


def test_concurrent_publishes_over_http(live_hub: LiveHub, actors: Actors) -> None:
    n = 6
    start = threading.Event()
    statuses: list[int] = []

    def attempt(i: int) -> None:
        src = f"def load_environment(**kw):\n    return {i}\n".encode()
        (wn, wb), (sn, sb) = Dist(files={"demo_env/__init__.py": src}).pair()
        start.wait()
        r = httpx.post(
            f"{live_hub.url}/api/v1/environments/alice/demo-env/versions",
            files={"wheel": (wn, wb), "sdist": (sn, sb)},
            headers=Actors.auth(actors.alice),
            timeout=60,
        )
        statuses.append(r.status_code)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(300)
    assert sorted(statuses) == [201] + [409] * (n - 1)
    hub = live_hub.hub
    assert counts(hub) == (1, 2)
    with hub.db.read() as s:
        assert sorted(s.scalars(select(File.blob_key))) == blob_files(hub)


def test_interrupted_publish_leaves_nothing(hub: Hub, actors: Actors, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A failure after the blobs are written (here: the DB insert dies) removes them again."""
    from hub_server.auth import authenticate

    def boom(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # the harshest interruption Python code sees

    monkeypatch.setattr(publishing, "_insert_version", boom)
    with hub.db.read() as s:
        principal, _ = authenticate(s, actors.alice)
    wheel, sdist = Dist().pair()
    with pytest.raises(KeyboardInterrupt):
        services.publish(
            hub, principal, "alice", "demo-env", services.Upload(*wheel), services.Upload(*sdist)
        )
    assert_nothing_stored(hub)


def test_gc_removes_only_old_unreferenced_blobs(client: TestClient, hub: Hub, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair()).status_code == 201
    kept = blob_files(hub)
    hub.blobs.put("demo-env/0.9/1000-deadbeef0000/demo_env-0.9.tar.gz", b"orphan from a crash")
    hub.blobs.put(f"demo-env/0.9/{10**13}-young0000000/demo_env-0.9.tar.gz", b"publish in flight")
    removed = services.collect_garbage(hub, grace=timedelta(hours=1))
    assert removed == ["demo-env/0.9/1000-deadbeef0000/demo_env-0.9.tar.gz"]
    assert set(kept) <= set(blob_files(hub))


def test_readme_is_sanitised(client: TestClient, actors: Actors) -> None:
    readme = (
        '# Hi\n\n<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>\n'
    )
    assert publish(client, actors.alice, *Dist(readme=readme).pair()).status_code == 201
    page = client.get("/alice/demo-env")
    assert page.status_code == 200
    assert (
        "<script>alert(1)" not in page.text and "onerror" not in page.text and "javascript:" not in page.text
    )
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_blob_store_rejects_escaping_keys(tmp_path: Path) -> None:
    from hub_server.blobs import LocalBlobStore

    store = LocalBlobStore(tmp_path / "b")
    for key in ("../x", "a/../../x", "/abs", "a//b", ""):
        with pytest.raises(ValueError):
            store.put(key, b"x")


def test_concurrent_first_publishes_of_different_versions_both_land(
    hub: Hub, actors: Actors, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Two new versions of a not-yet-existing environment race for its row: the loser retries and lands."""
    from hub_server.auth import authenticate

    barrier = threading.Barrier(2, timeout=300)
    real_insert = publishing._insert_once
    first_call = threading.local()

    def synchronised_insert(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not getattr(first_call, "done", False):  # line both threads up once; a retry goes straight on
            first_call.done = True
            barrier.wait()
        return real_insert(*args, **kwargs)

    monkeypatch.setattr(publishing, "_insert_once", synchronised_insert)
    with hub.db.read() as s:
        principal, _ = authenticate(s, actors.alice)
    results: list[str] = []

    def attempt(version: str) -> None:
        wheel, sdist = Dist(version=version).pair()
        services.publish(
            hub, principal, "alice", "demo-env", services.Upload(*wheel), services.Upload(*sdist)
        )
        results.append(version)

    threads = [threading.Thread(target=attempt, args=(v,)) for v in ("0.1.0", "0.2.0")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(results) == ["0.1.0", "0.2.0"]
    assert counts(hub) == (2, 4)
