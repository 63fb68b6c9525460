"""READMEs (issue 24 items 7 and 14): rendered once at publish in a limited child and stored, deep raw-HTML
nesting refused, no rendering on a page view whatever ``?version=`` asks; images only from the hub
itself, judged by WHATWG URL parsing (SQLite and PostgreSQL)."""

from __future__ import annotations

import html
import re

import ada_url
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from hub_server import readme
from hub_server.context import Hub
from hub_server.models import Version
from hub_server.validation import UploadError
from tests.hub._dists import Dist
from tests.hub.conftest import Actors, publish


def test_deep_raw_html_nesting_is_refused_at_publish(client: TestClient, actors: Actors) -> None:
    for deep in ("<div>" * 24_000 + "x" + "</div>" * 24_000, "<span><b>" * 60 + "x", "<blockquote>" * 101):
        r = publish(client, actors.alice, *Dist(readme=deep).pair())
        assert r.status_code == 400, r.text[:300]
        assert f"more than {readme.MAX_DEPTH} levels deep" in r.json()["detail"]
    fine = "<div>" * 90 + "deep but fine" + "</div>" * 90 + "\n\n<p>one<p>two<p>three\n\n" + "<li>x" * 500
    assert publish(client, actors.alice, *Dist(readme=fine).pair()).status_code == 201


def test_views_never_render_for_any_version(
    client: TestClient, hub: Hub, actors: Actors, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version in ("0.1.0", "0.2.0"):
        dist = Dist(
            version=version, readme=f"# Release {version}\n\n<details><summary>more</summary>x</details>"
        )
        assert publish(client, actors.alice, *dist.pair()).status_code == 201

    def no_rendering(*args: object, **kwargs: object) -> str:
        raise AssertionError("a page view rendered a README")

    monkeypatch.setattr(readme, "render", no_rendering)
    monkeypatch.setattr("hub_server.services.environments.render_limited", no_rendering)
    for query in ("", "?version=0.1.0", "?version=0.2.0", "?version=0.1"):
        page = client.get(f"/alice/demo-env{query}")
        assert page.status_code == 200, page.text[:300]
        assert "<details><summary>more</summary>" in page.text
    assert "Release 0.1.0" in client.get("/alice/demo-env?version=0.1.0").text


def test_a_version_from_before_is_rendered_on_its_first_view_then_stored(
    client: TestClient, hub: Hub, actors: Actors, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert publish(client, actors.alice, *Dist(readme="# Old\n\n*emphasis*").pair()).status_code == 201
    with hub.db.write() as session:  # what a version published before migration 0006 looks like
        session.execute(update(Version).values(readme_html=None))
    rendered: list[str] = []
    real = readme.render_limited
    monkeypatch.setattr(
        "hub_server.services.environments.render_limited",
        lambda text, ctype: rendered.append(text) or real(text, ctype),
    )
    for _ in range(3):
        assert "<em>emphasis</em>" in client.get("/alice/demo-env").text
    assert rendered == ["# Old\n\n*emphasis*"]


def test_a_renderer_out_of_limits_refuses_the_publish(
    client: TestClient, actors: Actors, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readme, "_CHILD_MEMORY", 8 * 1024 * 1024)  # the child cannot even import nh3
    r = publish(client, actors.alice, *Dist(readme="# Hi\n").pair())
    assert r.status_code == 400 and "within the hub's limits" in r.json()["detail"]


def test_rendering_runs_in_a_child_with_limits() -> None:
    assert "<h1>Hi</h1>" in readme.render_limited("# Hi\n", "text/markdown")
    with pytest.raises(UploadError, match="levels deep"):
        readme.render_limited("<i>" * 200, "text/markdown")
    assert readme.render_limited("<b>plain</b>", "text/plain") == "<pre>&lt;b&gt;plain&lt;/b&gt;</pre>"


# --- item 14: images only from the hub, as a browser resolves the URL ------------------------------------
ELSEWHERE = [
    "\\\\evil.example/x.png",
    "/\\evil.example/x.png",
    "\\/evil.example/x.png",
    "//evil.example/x.png",
    " //evil.example/x.png",
    "/\t/evil.example/x.png",
    "/\n/evil.example/x.png",
    "\x01//evil.example/x.png",
    "https:evil.example/x.png",  # relative on an https page, another host on an http one
    "http:\\\\evil.example/x.png",
    "https://evil.example/x.png",
    "HTTPS://EVIL.EXAMPLE/x.png",
    "data:image/png;base64,iVBORw0KGgo=",
    "javascript:alert(1)",
]
HERE = ["/static/logo.png", "logo.png", "./img/a.png", "../img/a.png", "/alice/demo-env/x.png", "?x=1"]


@pytest.mark.parametrize("src", ELSEWHERE)
def test_same_origin_refuses_every_spelling_of_another_host(src: str) -> None:
    assert not readme.same_origin(src)


@pytest.mark.parametrize("src", HERE)
def test_same_origin_keeps_paths_on_the_hub(src: str) -> None:
    assert readme.same_origin(src)


def test_readme_images_from_elsewhere_never_load(client: TestClient, actors: Actors) -> None:
    sources = [s for s in ELSEWHERE if "\x01" not in s]  # core metadata refuses control characters
    raw = "".join(f'<img src="{s.replace(chr(9), "&#9;").replace(chr(10), "&#10;")}" alt="r{i}">\n'
                  for i, s in enumerate(sources))  # fmt: skip
    markdown = "".join(f"![m{i}](<{s}>)\n" for i, s in enumerate(sources) if "\n" not in s)
    local = '<img src="/static/logo.png" alt="local">\n\n![here](/static/logo.png)\n'
    text = f"# Images\n\n{raw}\n{markdown}\n{local}"
    assert publish(client, actors.alice, *Dist(readme=text).pair()).status_code == 201
    page = client.get("/alice/demo-env").text
    srcs = [html.unescape(s) for s in re.findall(r'<img[^>]*\ssrc="([^"]*)"', page)]
    assert srcs.count("/static/logo.png") == 2
    # what is left is a path on the hub (markdown-it percent-encodes the backslashes it keeps)
    for page_url in ("http://hub.test/alice/demo-env", "https://hub.test/alice/demo-env"):
        assert {ada_url.URL(s, base=page_url).host for s in srcs} == {"hub.test"}, srcs
