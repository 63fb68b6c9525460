"""Managing a namespace in a real browser (issue 32 item 2, issue 33 item 8): an environment's Settings page
— make it public or private, share it with a user, remove the grant — and an organisation's members page —
add a member with a role, change a role, remove a member — as plain CSRF-checked forms (no script of their
own), with what each change does checked against the hub, and both pages at a phone's width (390 px)
without sideways scrolling. Locator assertions only (the CSP forbids evaluating strings in the page)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hub_server import services
from tests.hub._dists import Dist
from tests.hub.browser.conftest import VIEWPORT, Site, shot
from tests.hub.browser.test_phone_layout import PHONE, _overflow

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def team(site: Site) -> Site:
    """alice's private alice/team-env; the organisation crew (alice owner, bob member); user carol."""
    wheel, sdist = Dist("team-env", summary="Only for the team").pair()
    r = httpx.post(
        f"{site.url}/api/v1/environments/alice/team-env/versions",
        files={"wheel": wheel, "sdist": sdist},
        data={"visibility": "private"},
        headers={"Authorization": f"Bearer {site.alice}"},
        timeout=300,
    )
    assert r.status_code == 201, r.text
    services.create_user(site.hub, "carol")
    services.create_org(site.hub, "crew", ["alice", "bob"])
    return site


@pytest.fixture
def alice(team: Site, signed_out: Any) -> Iterator[Any]:
    """The page, signed in as alice through the login form."""
    from playwright.sync_api import expect

    page = signed_out
    page.goto(team.url + "/login")
    page.fill("input[name=token]", team.alice)
    page.click("main form button[type=submit]")
    page.wait_for_url(team.url + "/")
    expect(page.locator("header a.who")).to_have_text("alice")
    yield page


def _status(team: Site, path: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(team.url + path, headers=headers, timeout=60).status_code


def test_settings_page_shares_unshares_and_makes_public(team: Site, alice: Any) -> None:
    from playwright.sync_api import expect

    page = alice
    page.goto(team.url + "/alice/team-env")
    page.click(".env-head a.settings-link")
    page.wait_for_url("**/alice/team-env/settings")
    expect(page.locator("#visibility")).to_have_text("private")
    expect(page.locator("#no-grants")).to_be_visible()
    expect(page.locator("script:not([src='/static/copy.js'])")).to_have_count(0)  # plain forms
    assert _status(team, "/simple/team-env/", team.bob) == 404

    page.fill("form.share-form input[name=username]", "bob")
    page.click("form.share-form button[type=submit]")
    page.wait_for_url("**/alice/team-env/settings")
    row = page.locator("table.grants tr#grant-bob")
    expect(row.locator("td").nth(1)).to_have_text("alice")
    assert _status(team, "/simple/team-env/", team.bob) == 200  # bob reads it now
    shot(page, "environment-settings")

    page.fill("form.share-form input[name=username]", "nobody")
    page.click("form.share-form button[type=submit]")
    expect(page.locator("p.error")).to_have_text("user 'nobody' does not exist")
    expect(page.locator("form.share-form input[name=username]")).to_have_value("nobody")

    page.goto(team.url + "/alice/team-env/settings")
    row.locator("button", has_text="Remove").click()
    page.wait_for_url("**/alice/team-env/settings")
    expect(page.locator("#no-grants")).to_be_visible()
    assert _status(team, "/simple/team-env/", team.bob) == 404  # at once

    page.locator("form.visibility button", has_text="Make public").click()
    page.wait_for_url("**/alice/team-env/settings")
    expect(page.locator("#visibility")).to_have_text("public")
    assert _status(team, "/simple/team-env/") == 200
    page.locator("form.visibility button", has_text="Make private").click()
    page.wait_for_url("**/alice/team-env/settings")
    expect(page.locator("#visibility")).to_have_text("private")
    assert _status(team, "/simple/team-env/") == 404


def test_members_page_adds_changes_and_removes(team: Site, alice: Any) -> None:
    from playwright.sync_api import expect

    page = alice
    page.goto(team.url + "/account")
    orgs = page.locator("section", has=page.locator("h2", has_text="Organisations"))
    expect(orgs.locator(".card .badge")).to_have_text("owner")
    orgs.locator("a.title", has_text="crew").click()
    page.wait_for_url("**/account/orgs/crew")
    members = page.locator("table.members tbody tr")
    expect(members).to_have_count(2)

    page.fill("form.member-form input[name=username]", "carol")
    page.select_option("form.member-form select[name=role]", "admin")
    page.click("form.member-form button[type=submit]")
    page.wait_for_url("**/account/orgs/crew")
    expect(page.locator("tr#member-carol select[name=role]")).to_have_value("admin")

    bob = page.locator("tr#member-bob")
    bob.locator("select[name=role]").select_option("admin")
    bob.locator("form.role-form button").click()
    page.wait_for_url("**/account/orgs/crew")
    expect(page.locator("tr#member-bob select[name=role]")).to_have_value("admin")

    page.locator("tr#member-carol button", has_text="Remove").click()
    page.wait_for_url("**/account/orgs/crew")
    expect(page.locator("tr#member-carol")).to_have_count(0)
    # the last owner cannot leave: the page says why
    page.locator("tr#member-alice button", has_text="Leave").click()
    expect(page.locator("p.error")).to_contain_text("alice is the last owner of crew")
    with team.hub.db.read() as session:
        assert [(m.username, m.role) for m in services.list_members(session, None, "crew")] == [
            ("alice", "owner"),
            ("bob", "admin"),
        ]
    shot(page, "org-members")


def test_both_pages_fit_a_phone(team: Site, alice: Any) -> None:
    page = alice
    services.share(team.hub, team.hub.principal(team.alice), "alice", "team-env", "carol")
    page.set_viewport_size(PHONE)
    try:
        for path, name in (
            ("/alice/team-env/settings", "settings-mobile"),
            ("/account/orgs/crew", "members-mobile"),
        ):
            page.goto(team.url + path)
            assert _overflow(page) == [], path
            shot(page, name)
    finally:
        page.set_viewport_size(VIEWPORT)
