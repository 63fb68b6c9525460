"""The publish-time smoke-check badge in a real browser: a good environment's version page says passed (green),
a broken one's (``load_environment`` raises) says failed (red) and its folded log opens on a click to show
the reason. The checks run for real in a bubblewrap (else gVisor) sandbox, as in tests/hub/test_smoke_check.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_server import services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.hub._dists import Dist
from tests.hub._helpers import BROKEN_SOURCE, smoke_backend
from tests.hub.browser.conftest import shot
from tests.hub.conftest import serve_app
from verifiers.clients.local_model import free_port

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

GREEN = "rgb(2, 122, 72)"  # hub.css: .badge.smoke.passed
RED = "rgb(180, 35, 24)"  # hub.css: .badge.smoke.failed


@pytest.fixture(scope="module")
def smoke_site(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A hub with smoke checks on (uvicorn on a loopback port), a good and a broken environment published
    and their checks finished; yields the hub's URL."""

    backend = smoke_backend()
    tmp = tmp_path_factory.mktemp("browser-smoke-hub")
    db = tmp / "hub.sqlite"
    shutil.copyfile(sqlite_template, db)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = HubSettings(
        data_dir=tmp / "data",
        database_url=f"sqlite:///{db}",
        upstream_index="none",
        smoke_checks=True,
        smoke_backend=backend,
        smoke_index_url=f"{url}/simple/",  # this hub's own index (the default base_url is not served here)
    )
    app = create_app(settings)
    hub: Hub = app.state.hub
    services.create_user(hub, "alice")
    token = services.create_token(hub, "alice", scopes=["publish"])[0]
    with serve_app(app, port):
        good = Dist(name="smoke-good", summary="Loads and rolls out")
        broken = Dist(
            name="smoke-broken", summary="Raises on load", files={"smoke_broken/__init__.py": BROKEN_SOURCE}
        )
        for dist in (good, broken):
            wheel, sdist = dist.pair()
            r = httpx.post(
                f"{url}/api/v1/environments/alice/{dist.name}/versions",
                files={"wheel": wheel, "sdist": sdist},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
            assert r.status_code == 201, r.text  # the publish does not wait for the check
        assert hub.smoke is not None and hub.smoke.wait_idle(timeout=600)
        yield url


def _color(page: Any, selector: str) -> str:
    return str(page.evaluate(f"getComputedStyle(document.querySelector({selector!r})).color"))


def test_a_good_environment_shows_a_passed_badge(smoke_site: str, signed_out: Any) -> None:
    page = signed_out
    page.goto(smoke_site + "/alice/smoke-good?version=0.1.0")
    check = page.locator("p[data-smoke]")
    assert check.get_attribute("data-smoke") == "passed"
    badge = check.locator("span.badge.smoke.passed")
    assert badge.inner_text() == "smoke check: passed"
    assert " in bwrap" in check.inner_text() or " in runsc" in check.inner_text()  # duration and backend
    assert _color(page, "span.badge.smoke") == GREEN
    assert page.locator("details.smoke-log").count() == 0  # a passed check keeps no log on the page
    shot(page, "smoke-passed")


def test_a_broken_environment_shows_a_failed_badge_and_its_log(smoke_site: str, signed_out: Any) -> None:
    page = signed_out
    page.goto(smoke_site + "/alice/smoke-broken?version=0.1.0")
    check = page.locator("p[data-smoke]")
    assert check.get_attribute("data-smoke") == "failed"
    assert check.locator("span.badge.smoke.failed").inner_text() == "smoke check: failed"
    assert "load_environment: RuntimeError: broken on purpose" in check.inner_text()
    assert _color(page, "span.badge.smoke") == RED
    assert page.locator("ul.versions li a").all_inner_texts() == ["0.1.0"]  # published all the same

    log = page.locator("details.smoke-log")
    assert log.get_attribute("open") is None
    assert not log.locator("pre").is_visible()  # folded until clicked
    log.locator("summary").click()
    assert log.get_attribute("open") is not None
    text = log.locator("pre").inner_text()
    assert log.locator("pre").is_visible()
    assert "Successfully installed smoke-broken-0.1.0" in text
    assert 'raise RuntimeError("broken on purpose: no dataset here")' in text
    shot(page, "smoke-failed")

    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the badge and the log stay inside
    page.reload()
    page.locator("details.smoke-log summary").click()
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.querySelector('span.badge.smoke').getBoundingClientRect().right]"
    )
    assert widths[0] <= widths[1] and widths[2] <= widths[1], widths
    shot(page, "smoke-failed-narrow")
