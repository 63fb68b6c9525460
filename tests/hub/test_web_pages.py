"""The web UI's server side (issue 14): the empty hub's first-run page, tag search and facets, the source
browser (highlighted, binary, large, escaped, private), the leaderboard chart, CSRF on the account forms,
the offline API reference and the HTML 404 page (SQLite and PostgreSQL). tests/hub/browser drives them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient

from hub_server import csrf, source_view
from hub_server.auth import COOKIE_NAME
from hub_server.context import Hub
from hub_server.leaderboard_chart import reward_chart_svg
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish, web_session
from verifiers.hub import wire

HTML = {"Accept": "text/html"}


def test_an_empty_hub_says_how_to_publish(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "No environments yet" in page.text and "vf-push" in page.text
    assert "No environments match" in client.get("/?q=nothing").text  # a search is not a first run


def test_text_search_covers_tags_and_the_tag_filters_count(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist(keywords=["arithmetic", "math"]).pair()).status_code == 201
    assert (
        publish(
            client, actors.bob, *Dist("other-env", keywords=["math"]).pair(), owner="bob", name="other-env"
        ).status_code
        == 201
    )
    page = client.get("/?q=arithm")
    assert "alice/demo-env" in page.text and "bob/other-env" not in page.text
    home = client.get("/").text
    assert 'href="/?tag=math"' in home and '<span class="count">2</span>' in home


def _sources() -> dict[str, bytes]:
    return {
        "demo_env/__init__.py": b"def load_environment(**kwargs):\n    return '<script>alert(1)</script>'\n",
        "demo_env/blob.dat": b"\x00\x01binary",
        "demo_env/big.txt": b"x" * (source_view.MAX_SHOWN + 1),
    }


def test_the_source_browser(client: TestClient, actors: Actors, tmp_path: Path) -> None:
    dist = Dist(files=_sources())
    assert publish(client, actors.alice, *dist.pair()).status_code == 201
    base = "/alice/demo-env/source/0.1.0/"
    code = client.get(base + "demo_env/__init__.py")
    assert code.status_code == 200 and 'class="highlight"' in code.text
    assert "<script>alert" not in code.text and "&lt;" in code.text  # escaped by Pygments
    assert "default-src 'none'" in code.headers["content-security-policy"]
    assert "Binary file" in client.get(base + "demo_env/blob.dat").text
    assert "Large file" in client.get(base + "demo_env/big.txt").text
    assert client.get(base + "demo_env/missing.py").status_code == 404
    assert client.get("/alice/demo-env/source/9.9/demo_env/__init__.py").status_code == 404


def test_private_sources_are_a_404_for_others(client: TestClient, actors: Actors) -> None:
    assert publish(client, actors.alice, *Dist().pair(), visibility="private").status_code == 201
    url = "/alice/demo-env/source/0.1.0/demo_env/__init__.py"
    assert client.get(url).status_code == 404
    assert client.get(url, headers=Actors.auth(actors.bob)).status_code == 404
    assert client.get(url, headers=Actors.auth(actors.alice)).status_code == 200


def test_the_pygments_stylesheet_is_current() -> None:
    css = (Path(source_view.__file__).parent / "static" / "pygments.css").read_text()
    assert source_view.stylesheet() in css


def test_the_chart_escapes_model_names() -> None:
    now = datetime.now(UTC)
    entries = [
        wire.LeaderboardEntry(
            model="<script>x</script>",
            version="1.0",
            run_id=1,
            avg_reward=0.5,
            reward_ci95=0.9,
            pass_at_k={},
            rollout_count=4,
            date=now,
            uploader=None,
        ),
        wire.LeaderboardEntry(
            model="m",
            version="1.0",
            run_id=2,
            avg_reward=None,
            reward_ci95=None,
            pass_at_k={},
            rollout_count=4,
            date=now,
            uploader=None,
        ),
    ]
    svg = str(reward_chart_svg(entries))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count('class="bar"') == 1 and "no score" in svg
    assert str(reward_chart_svg([])) == ""


def test_account_forms_need_the_csrf_token(client: TestClient, hub: Hub, actors: Actors) -> None:
    session_id = web_session(hub, actors.alice)
    client.cookies.set(COOKIE_NAME, session_id)
    assert client.get("/account").status_code == 200
    good = csrf.form_token(session_id)
    assert client.post("/account/tokens", data={"name": "x"}).status_code == 403
    assert client.post("/account/tokens", data={"csrf": "0" * 64}).status_code == 403
    foreign = {"Origin": "http://evil.example"}
    assert client.post("/account/tokens", data={"csrf": good}, headers=foreign).status_code == 403
    made = client.post("/account/tokens", data={"csrf": good, "name": "laptop", "scope": "read"})
    assert made.status_code == 200 and "vfh_" in made.text and made.headers["cache-control"] == "no-store"
    assert client.post("/alice/nothing/star", data={"starred": "true"}).status_code == 403
    assert client.post("/alice/nothing/star", data={"csrf": good}).status_code == 404
    assert client.post("/logout").status_code == 403  # without the token
    assert client.post("/logout", data={"csrf": good}, follow_redirects=False).status_code == 303
    client.cookies.clear()
    assert client.get("/account", follow_redirects=False).headers["location"] == "/login"


def test_api_docs_are_served_without_a_cdn(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and "/api/v1/environments" in page.text
    # no script but the hub's own copy buttons (static/copy.js), nothing from a CDN
    assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/static/copy.js" defer>']
    assert "cdn" not in page.text.lower()
    assert "cdn.jsdelivr" not in client.get("/redoc").text  # FastAPI's CDN pages are off


def test_unknown_pages_are_an_html_404_and_the_api_keeps_json(client: TestClient) -> None:
    page = client.get("/a/b/c/d", headers=HTML)
    assert (
        page.status_code == 404
        and "text/html" in page.headers["content-type"]
        and "<h1>404</h1>" in page.text
    )
    assert client.get("/a/b/c/d").json() == {"detail": "Not Found"}
    assert client.get("/api/v1/nothing", headers=HTML).json() == {"detail": "Not Found"}


def test_login_needs_the_login_pages_token(client: TestClient, actors: Actors) -> None:
    assert client.post("/login", data={"token": actors.alice}).status_code == 403  # no form token, no cookie
    form = client.get("/login")
    token = form.cookies[csrf.LOGIN_COOKIE]
    assert f'name="csrf" value="{token}"' in form.text
    foreign = {"Origin": "http://evil.example"}
    refused = client.post("/login", data={"token": actors.alice, "csrf": token}, headers=foreign)
    assert refused.status_code == 403
    bad = client.post("/login", data={"token": "vfh_nope", "csrf": token})
    assert bad.status_code == 401 and f'value="{token}"' in bad.text  # the form can be sent again
    ok = client.post("/login", data={"token": actors.alice, "csrf": token}, follow_redirects=False)
    assert ok.status_code == 303 and ok.cookies[COOKIE_NAME].startswith("vfs_")  # a session, not the token


def test_the_home_page_pages(client: TestClient, actors: Actors) -> None:
    for i in range(21):
        name = f"env-{i:02d}"
        assert publish(client, actors.alice, *Dist(name).pair(), name=name).status_code == 201
    first = client.get("/?sort=name")
    assert "21 environments · showing 1–20" in first.text and "page 1 of 2" in first.text
    assert 'href="/?sort=name&amp;page=2"' in first.text and "alice/env-19" in first.text
    second = client.get("/?sort=name&page=2")
    assert (
        "showing 21–21" in second.text and "alice/env-20" in second.text and "alice/env-00" not in second.text
    )
