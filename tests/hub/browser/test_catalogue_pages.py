"""The hub's pages in a real browser: search and tag filters, an environment page (README, versions, an older
version's notice, the source browser), a hostile README that must not run, signing in with a token, creating
and revoking a token, a private environment that is a 404 when signed out, the offline API docs, a narrow
screen and the 404 page."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from hub_server.auth import AuthError
from tests.hub._dists import Dist
from tests.hub.browser.conftest import VIEWPORT, Site, shot

pytestmark = pytest.mark.browser

HOSTILE_README = (
    "# Hostile\n\n<script>window.__pwned = 1</script>\n\n"
    '<img src="x" onerror="window.__pwned = 2">\n\n<a href="javascript:window.__pwned=3" id="js">click</a>\n'
)
MATH_README = (
    "# Math drill\n\nArithmetic problems, scored by **exact match**.\n\n"
    "| split | rows |\n|---|---|\n| train | 100 |\n\n```python\nenv = load_environment()\n```\n"
)


def _publish(site: Site, token: str, owner: str, dist: Dist, visibility: str = "public") -> None:
    wheel, sdist = dist.pair()
    r = httpx.post(
        f"{site.url}/api/v1/environments/{owner}/{dist.name}/versions",
        files={"wheel": wheel, "sdist": sdist},
        data={"visibility": visibility},
        headers={"Authorization": f"Bearer {token}"},
        timeout=300,
    )
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def catalogue(site: Site) -> Site:
    source = (
        b'"""Math drill."""\n\n\ndef load_environment(**kwargs):\n    return {"difficulty": 3}  # a stub\n'
    )
    files = {"math_drill/__init__.py": source, "math_drill/data.bin": b"\x00\x01\x02binary"}
    for version in ("0.1.0", "0.2.0"):
        dist = Dist("math-drill", version, "Arithmetic drills", MATH_README, keywords=["math", "arithmetic"])
        dist.files = files
        _publish(site, site.alice, "alice", dist)
    _publish(site, site.bob, "bob", Dist("code-golf", summary="Shortest programs win", keywords=["code"]))
    _publish(site, site.alice, "alice", Dist("word-ladder", summary="Change one letter", keywords=["puzzle"]))
    _publish(site, site.alice, "alice", Dist("xss-env", summary="A hostile README", readme=HOSTILE_README))
    _publish(site, site.alice, "alice", Dist("secret-env", summary="Nobody else sees this"), "private")
    starred = httpx.put(
        f"{site.url}/api/v1/environments/bob/code-golf/star",
        headers={"Authorization": f"Bearer {site.alice}"},
    )
    assert starred.status_code == 200, starred.text
    return site


def test_search_and_tag_filters(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    page.goto(catalogue.url + "/")
    assert "4 environments" in page.locator(".count-line").inner_text()  # the private one is not counted
    assert page.locator(".card").count() == 4
    shot(page, "home")

    page.fill("header .search input[name=q]", "arithmetic")  # a tag, found by the text search
    page.press("header .search input[name=q]", "Enter")
    page.wait_for_url("**/?q=arithmetic")
    assert [c.inner_text() for c in page.locator(".card .title").all()] == ["alice/math-drill"]

    page.goto(catalogue.url + "/")
    page.locator(".tags a.tag", has_text="code").click()
    page.wait_for_url("**/?*tag=code*")
    assert [c.inner_text() for c in page.locator(".card .title").all()] == ["bob/code-golf"]
    assert page.locator(".tags a.tag.active").inner_text().startswith("code")

    page.select_option("section.filters select[name=sort]", "name")
    page.fill("section.filters input[name=tag]", "")
    page.click("section.filters button[type=submit]")
    page.wait_for_url("**/?*sort=name*")
    names = [c.inner_text() for c in page.locator(".card .title").all()]
    assert names == sorted(names, key=lambda n: n.split("/")[1]) and len(names) == 4


def test_environment_page_readme_versions_and_source(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    page.goto(catalogue.url + "/alice/math-drill")
    readme = page.locator("article.readme")
    assert readme.locator("h1").inner_text() == "Math drill"
    assert readme.locator("table td").first.inner_text() == "train"
    assert [v.inner_text() for v in page.locator("ul.versions li a").all()] == ["0.2.0", "0.1.0"]
    assert page.locator(".notice.newer").count() == 0
    shot(page, "environment-versions")

    page.locator("ul.versions a", has_text="0.1.0").click()
    notice = page.locator(".notice.newer")
    assert "0.2.0" in notice.inner_text()
    notice.locator("a").click()
    page.wait_for_url("**/alice/math-drill")

    page.locator("ul.srcfiles a", has_text="math_drill/__init__.py").click()
    code = page.locator(".source-view .highlight")
    assert "load_environment" in code.inner_text()
    assert code.locator("span.k, span.kn, span.nf").count() > 0  # Pygments' token classes: highlighted
    assert (
        page.evaluate("getComputedStyle(document.querySelector('.highlight .k')).color") != "rgb(29, 35, 48)"
    )
    shot(page, "source")
    page.locator("aside a", has_text="data.bin").click()
    assert "Binary file" in page.locator(".source-view").inner_text()


def test_a_hostile_readme_does_not_run(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    page.goto(catalogue.url + "/alice/xss-env")
    assert page.locator("article.readme h1").inner_text() == "Hostile"
    # Every image has loaded or failed (the load event waits for them): an onerror on the broken one would
    # have fired by now. (Not a string predicate: the page's CSP forbids evaluating strings.)
    page.wait_for_load_state("load")
    assert page.evaluate("window.__pwned") is None
    # the only script is the hub's own copy.js; none from the README
    assert page.locator("article.readme script").count() == 0 and page.locator("[onerror]").count() == 0
    assert [s.get_attribute("src") for s in page.locator("script").all()] == ["/static/copy.js"]
    js = page.locator("#js, article.readme a", has_text="click")
    assert js.count() == 0 or not (js.first.get_attribute("href") or "").startswith("javascript:")


def test_sign_in_tokens_and_a_private_environment(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    response = page.goto(catalogue.url + "/alice/secret-env")
    assert response is not None and response.status == 404
    assert page.locator("h1").inner_text() == "404"

    page.goto(catalogue.url + "/login")
    page.fill("input[name=token]", catalogue.alice)
    page.click("main form button[type=submit]")
    page.wait_for_url(catalogue.url + "/")
    page.goto(catalogue.url + "/alice/word-ladder")
    page.click("form.star button")  # a CSRF-protected form
    page.wait_for_url("**/alice/word-ladder")
    assert page.locator("form.star button").inner_text() == "★ Unstar" and "1 stars" in page.inner_text(
        ".env-head"
    )
    page.click("header a.who")
    page.wait_for_url("**/account")
    own = page.locator("section", has=page.locator("h2", has_text="Your environments"))
    assert own.locator(".card", has_text="alice/secret-env").locator(".badge.private").count() == 1
    stars = page.locator("section", has=page.locator("h2", has_text="Starred"))
    assert [c.inner_text() for c in stars.locator(".card .title").all()] == [
        "alice/word-ladder",
        "bob/code-golf",
    ]

    page.fill("form.token-form input[name=name]", "ci-laptop")
    page.select_option("form.token-form select[name=scope]", "read")
    page.click("form.token-form button[type=submit]")
    secret = page.locator("#new-token").inner_text().strip()
    assert secret.startswith("vfh_")
    assert catalogue.hub.principal(secret).scopes == frozenset({"read"})
    shot(page, "account")
    row = page.locator("table.tokens tr", has_text="ci-laptop")
    row.locator("button", has_text="Revoke").click()
    page.wait_for_url("**/account")
    assert "revoked" in page.locator("table.tokens tr", has_text="ci-laptop").inner_text()
    with pytest.raises(AuthError):
        catalogue.hub.principal(secret)

    response = page.goto(catalogue.url + "/alice/secret-env")
    assert response is not None and response.status == 200
    assert "Nobody else sees this" in page.inner_text("main")
    page.click("header form button")  # log out (a CSRF-protected form)
    page.wait_for_url(catalogue.url + "/")
    response = page.goto(catalogue.url + "/alice/secret-env")
    assert response is not None and response.status == 404


def test_a_form_posted_from_another_site_is_refused(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    page.goto(catalogue.url + "/login")
    page.fill("input[name=token]", catalogue.alice)
    page.click("main form button[type=submit]")
    page.wait_for_url(catalogue.url + "/")
    # the cookie is sent (same site, SameSite=Lax allows top-level POSTs), the CSRF field is not known
    page.set_content(
        f'<form id="f" method="post" action="{catalogue.url}/account/tokens"><input name="name" value="x"></form>'
    )
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")
    assert page.locator("h1").inner_text() == "403"


def test_api_docs_work_offline(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    hosts: set[str] = set()
    page.on("request", lambda r: hosts.add(urlsplit(r.url).netloc))
    page.goto(catalogue.url + "/docs")
    assert page.locator("section.operation").count() > 10
    assert page.locator("section.operation h2", has_text="/api/v1/environments/{owner}/{name}").count() >= 1
    assert hosts == {urlsplit(catalogue.url).netloc}  # nothing from a CDN
    shot(page, "api-docs", full_page=False)


def test_narrow_screens_and_the_404_page(catalogue: Site, signed_out: Any) -> None:
    page = signed_out
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        for path, name in (("/", "home-mobile"), ("/alice/math-drill", "environment-mobile")):
            page.goto(catalogue.url + path)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), path
            shot(page, name)
    finally:
        page.set_viewport_size(VIEWPORT)
    response = page.goto(catalogue.url + "/no/such/page/here")
    assert response is not None and response.status == 404
    assert page.locator("h1").inner_text() == "404" and page.locator("main a[href='/']").count() == 1
