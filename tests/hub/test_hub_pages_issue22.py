"""The hub's pages after a new user's first hour (issue 22): the leaderboard ranks by a lower confidence
bound and says so; a run's visibility is changed from its page; first-token sign-up where the hub allows
it; copy buttons on install commands; the rollout viewer's previous/next links; and ``vf-view``'s pages
(no link to an /openapi.json they do not serve, no "eval 0"). SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hub_server import csrf
from hub_server.app import create_app
from hub_server.auth import COOKIE_NAME
from hub_server.context import Hub
from hub_server.eval_stats import ranking_bound
from hub_server.local_view import LocalRun, create_local_app
from hub_server.settings import HubSettings
from tests.hub.conftest import Actors, web_session
from tests.hub.test_eval_runs import API, RUNS, _published, rollout, run_body
from tests.hub.test_local_view import LOOPBACK
from verifiers.hub import wire

BOARD = f"{API}/environments/alice/demo-env/leaderboard"


def _finished(client: TestClient, actors: Actors, h: str, key: str, model: str, rewards: list[float]) -> int:
    alice = Actors.auth(actors.alice)
    body = run_body(h, run_key=key, model=model, rollouts_per_example=1, num_examples=len(rewards))
    run_id = int(client.post(RUNS, json=body, headers=alice).json()["id"])
    rows = [rollout(i, 0, r) for i, r in enumerate(rewards)]
    assert (
        client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice).status_code
        == 200
    )
    assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).status_code == 200
    return run_id


def test_a_lucky_small_run_does_not_outrank_a_large_one(client: TestClient, actors: Actors) -> None:
    h = _published(client, actors)
    nine = _finished(
        client, actors, h, "key-nine-0001", "model-nine", [1.0] * 8 + [0.0]
    )  # mean 0.889, 95% CI [0.565, 0.980]
    one = _finished(client, actors, h, "key-one-00001", "model-one", [1.0])
    perfect = {
        n: _finished(client, actors, h, f"key-perf-{n:04d}", f"model-{n}-perfect", [1.0] * n)
        for n in (2, 3, 4)
    }
    board = client.get(BOARD).json()["entries"]
    ranked = [e["run_id"] for e in board]
    assert ranked.index(nine) < ranked.index(one)  # the reported case
    for run_id in perfect.values():  # and every other handful of perfect rollouts
        assert ranked.index(nine) < ranked.index(run_id)
    assert ranked[-1] == one
    top = board[0]
    assert top["run_id"] == nine and top["scored_count"] == 9
    assert top["reward_lower"] == pytest.approx(wire.wilson_interval(8 / 9, 9)[0])
    assert top["reward_ci_low"] == top["reward_lower"]  # what is ranked by is the interval shown
    assert [e["reward_lower"] for e in board] == sorted((e["reward_lower"] for e in board), reverse=True)
    page = client.get("/alice/demo-env").text
    assert wire.LEADERBOARD_RANKING in page  # the page says how it ranks
    table = page[page.index('<table class="board">') :]
    assert table.index("model-nine") < table.index("model-one")
    assert '<span class="bound" title="What the table is ranked by">0.565</span>, 0.980]' in table


def test_the_ranking_bound() -> None:
    def low(mean: float, n: int) -> float:
        return wire.wilson_interval(mean, n)[0]

    assert low(1.0, 1) == pytest.approx(1 / (1 + 1.959963984540054**2))
    assert low(0.0, 50) == pytest.approx(0.0, abs=1e-12)
    assert low(0.5, 10_000) == pytest.approx(0.5 - 1.96 * 0.005, abs=1e-3)
    assert ranking_bound(None, 0, None) is None
    assert ranking_bound(3.0, 1, None) is None  # another scale and no interval: ranked last
    # another scale: the normal interval, sd the rewards' (population) standard deviation
    assert ranking_bound(3.0, 4, 0.5) == pytest.approx(3.0 - wire.Z95 * 0.5 / 3**0.5)


def test_a_runs_visibility_is_changed_from_its_page(client: TestClient, hub: Hub, actors: Actors) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    body = run_body(h, visibility="private", rollouts_per_example=1)
    run_id = int(client.post(RUNS, json=body, headers=alice).json()["id"])
    client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": [rollout(0, 0, 1.0)]}, headers=alice)
    client.post(f"{API}/runs/{run_id}/finalize", headers=alice)
    page_url = f"/alice/demo-env/evals/{run_id}"
    form = f"{page_url}/visibility"

    client.cookies.set(
        COOKIE_NAME, web_session(hub, actors.alice_read)
    )  # may read it, may not publish: no form
    assert "Make public" not in client.get(page_url).text
    alice_session = web_session(hub, actors.alice)
    client.cookies.set(COOKIE_NAME, alice_session)
    page = client.get(page_url).text
    assert f'action="{form}"' in page and "Make public" in page
    good = csrf.form_token(alice_session)
    assert client.post(form, data={"visibility": "public"}).status_code == 403  # no CSRF token
    moved = client.post(form, data={"visibility": "public", "csrf": good}, follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == page_url
    client.cookies.clear()
    assert [e["run_id"] for e in client.get(BOARD).json()["entries"]] == [run_id]
    assert "Make private" not in client.get(page_url).text  # signed out: readable, no form

    bob_session = web_session(hub, actors.bob)
    client.cookies.set(COOKIE_NAME, bob_session)  # another namespace: refused
    assert (
        client.post(form, data={"visibility": "private", "csrf": csrf.form_token(bob_session)}).status_code
        == 403
    )
    client.cookies.set(COOKIE_NAME, alice_session)
    assert (
        client.post(form, data={"visibility": "private", "csrf": good}).status_code == 200
    )  # back on the page
    client.cookies.clear()
    assert client.get(BOARD).json()["entries"] == []
    assert client.get(page_url).status_code == 404

    api = client.patch(
        f"{API}/runs/{run_id}", json={"visibility": "public"}, headers=Actors.auth(actors.alice_read)
    )
    assert api.status_code == 403
    api = client.patch(f"{API}/runs/{run_id}", json={"visibility": "shared"}, headers=alice)
    assert api.status_code == 422


@pytest.fixture
def signup_client(settings: HubSettings) -> TestClient:
    return TestClient(create_app(settings.model_copy(update={"open_signup": True})))


def test_sign_up_is_off_by_default(client: TestClient) -> None:
    form = client.get("/login")
    assert "Sign up" not in form.text
    token = form.cookies[csrf.LOGIN_COOKIE]
    refused = client.post("/login/signup", data={"username": "carol", "csrf": token})
    assert refused.status_code == 404 and "does not take sign-ups" in refused.text


def test_first_token_sign_up_where_the_hub_allows_it(signup_client: TestClient) -> None:
    with signup_client as client:
        form = client.get("/login")
        assert "Sign up" in form.text and 'action="/login/signup"' in form.text
        token = form.cookies[csrf.LOGIN_COOKIE]
        assert client.post("/login/signup", data={"username": "carol"}).status_code == 403  # no form token
        foreign = {"Origin": "http://evil.example"}
        assert (
            client.post(
                "/login/signup", data={"username": "carol", "csrf": token}, headers=foreign
            ).status_code
            == 403
        )
        done = client.post("/login/signup", data={"username": "Carol", "csrf": token})
        assert done.status_code == 200 and done.headers["cache-control"] == "no-store"
        secret = re.search(r'id="new-token" data-copy>(vfh_[^<]+)<', done.text)
        assert secret is not None, done.text
        cookie = done.cookies[COOKIE_NAME]  # signed in with it: a web session, not the token itself
        assert cookie.startswith("vfs_") and cookie != secret.group(1)
        me = client.get(f"{API}/whoami", headers={"Authorization": f"Bearer {secret.group(1)}"}).json()
        assert (me["username"], me["scopes"]) == ("carol", ["publish"])
        assert "carol" in client.get("/account").text
        client.cookies.clear()
        client.cookies.set(csrf.LOGIN_COOKIE, token)  # signed out, on the login page again
        taken = client.post("/login/signup", data={"username": "carol", "csrf": token})
        assert taken.status_code == 409 and "already taken" in taken.text and COOKIE_NAME not in taken.cookies
        for name in ("verifiers", "account", "api", "-bad-"):
            refused = client.post("/login/signup", data={"username": name, "csrf": token})
            assert refused.status_code in (409, 422), name


def test_install_commands_have_copy_buttons(client: TestClient, actors: Actors) -> None:
    _published(client, actors)
    page = client.get("/alice/demo-env")
    assert re.search(r"<code data-copy>vf-install alice/demo-env</code>", page.text)
    assert re.search(r"<code data-copy>pip install --index-url \S+/simple/ demo-env</code>", page.text)
    assert '<script src="/static/copy.js" defer></script>' in page.text
    assert "<script>" not in page.text  # nothing inline: the CSP allows the hub's own files only
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    script = client.get("/static/copy.js")
    assert script.status_code == 200 and "navigator.clipboard" in script.text
    assert "user-select: all" in client.get("/static/hub.css").text  # without JavaScript: one click selects


def test_the_rollout_viewer_links_to_the_previous_and_next_rollout(
    client: TestClient, actors: Actors
) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    run_id = int(client.post(RUNS, json=run_body(h), headers=alice).json()["id"])
    rows = [rollout(0, 0, 1.0), rollout(0, 1, 0.0), rollout(2, 0, 1.0), rollout(2, 1, 0.5)]
    client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice)
    base = f"/alice/demo-env/evals/{run_id}/rollouts"
    first = client.get(f"{base}/0/0").text
    assert "first rollout" in first and f'href="{base}/0/1" rel="next"' in first and "1 of 4" in first
    middle = client.get(f"{base}/0/1").text  # across examples: 0/1 is followed by 2/0
    assert f'href="{base}/0/0" rel="prev"' in middle and f'href="{base}/2/0" rel="next"' in middle
    last = client.get(f"{base}/2/1").text
    assert f'href="{base}/2/0" rel="prev"' in last and "last rollout" in last and "4 of 4" in last


def _local_run(rewards: list[float]) -> LocalRun:
    meta = wire.EvalRunCreate(
        run_key="local-run-0001",
        version="0.1.0",
        content_hash="0" * 64,
        model="scripted/m",
        num_examples=len(rewards),
        rollouts_per_example=1,
    )
    records = [wire.RolloutRecord.model_validate(rollout(i, 0, r)) for i, r in enumerate(rewards)]
    return LocalRun(env_id="demo-env", status="completed", meta=meta, rollouts=records, label="/tmp/run")


class _Source:
    def __init__(self, run: LocalRun) -> None:
        self.run = run

    def snapshot(self) -> LocalRun:
        return self.run


def test_vf_view_pages_link_nothing_they_do_not_serve_and_never_say_eval_0(tmp_path: Path) -> None:
    with TestClient(create_local_app(_Source(_local_run([1.0, 0.0, 0.5]))), base_url=LOOPBACK) as client:
        for url in ("/", "/rollouts/0/0", "/rollouts/1/0"):
            page = client.get(url)
            assert page.status_code == 200
            title = re.search(r"<title>(.*?)</title>", page.text, re.S)
            assert title is not None and "eval 0" not in title.group(1).lower(), title
            assert "vf-view" in title.group(1)
            for link in re.findall(r'(?:href|src|action)="(/[^"]*)"', page.text):
                path = link.split("?")[0].split("#")[0]
                assert client.get(path or "/").status_code == 200, f"{url} links to {link}"
            assert "eval 0" not in page.text
        middle = client.get("/rollouts/1/0").text
        assert 'href="/rollouts/0/0" rel="prev"' in middle and 'href="/rollouts/2/0" rel="next"' in middle
