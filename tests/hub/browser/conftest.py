"""Browser tests: Playwright for Python driving Debian's chromium (``/usr/bin/chromium``), headless, against
a real hub on a loopback port seeded by the test (SQLite).

One browser (a persistent context on a fresh profile) and one page per session keep the wall time small.
Without playwright or chromium the tests skip, or fail when ``VF_REQUIRE_BROWSER=1`` (CI). Screenshots of
the main pages go to ``test-artifacts/screenshots/`` (ignored by git); ``save_docs_image`` copies two into
``docs/img/`` only when ``VF_REFRESH_DOCS_IMAGES=1`` asks to refresh the README's images, so a test run
leaves the checkout clean.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hub_server import services
from hub_server.app import create_app
from hub_server.context import Hub
from hub_server.settings import HubSettings
from tests.hub.conftest import ROOT, serve_app
from tests.tiers import component_missing

CHROMIUM = Path(os.environ.get("VF_TEST_CHROMIUM", "/usr/bin/chromium"))
SHOTS = ROOT / "test-artifacts" / "screenshots"
DOCS_IMG = ROOT / "docs" / "img"
VIEWPORT = {"width": 1280, "height": 900}
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# Package scope, not session: Playwright's sync API keeps an event loop running on the main thread while
# it is open, and every later asyncio test of the session would fail with "cannot be called from a running
# event loop". Closing it when this package's tests end gives the loop back.
@pytest.fixture(scope="package")
def browser_context() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        component_missing("VF_REQUIRE_BROWSER", "playwright is not installed (scripts/setup.sh installs it)")
    if not CHROMIUM.exists():
        component_missing(
            "VF_REQUIRE_BROWSER", f"{CHROMIUM} is missing (apt-get install chromium, or scripts/setup.sh)"
        )
    profile = tempfile.mkdtemp(prefix="vf-chromium-")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport=VIEWPORT,
        )
        context.set_default_timeout(120_000)  # waits end when their condition holds: this only guards a hang
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="package")
def page(browser_context: Any) -> Any:
    """The one page every test drives (tests reset cookies and the viewport they change)."""
    return browser_context.pages[0] if browser_context.pages else browser_context.new_page()


@pytest.fixture
def signed_out(page: Any) -> Iterator[Any]:
    """The page with no cookies, before and after the test; its viewport is reset afterwards."""
    page.context.clear_cookies()
    yield page
    page.context.clear_cookies()
    page.set_viewport_size(VIEWPORT)


def shot(page: Any, name: str, *, full_page: bool = True) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def save_docs_image(source: Path, name: str) -> None:
    """The README's hub screenshots are the tests' own (never drawn by hand), refreshed on request."""
    if os.environ.get("VF_REFRESH_DOCS_IMAGES") != "1":
        return
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, DOCS_IMG / name)


@dataclass
class Site:
    url: str
    hub: Hub
    alice: str  # publish token
    bob: str  # publish token
    tmp: Path


@pytest.fixture(scope="module")
def site(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A hub on a free loopback port (uvicorn in a thread) with users alice and bob."""

    tmp = tmp_path_factory.mktemp("browser-hub")
    db = tmp / "hub.sqlite"
    shutil.copyfile(sqlite_template, db)
    settings = HubSettings(
        data_dir=tmp / "data",
        database_url=f"sqlite:///{db}",
        cache_poll_seconds=0.2,
        upstream_index="none",
        base_url="http://localhost:8080",  # what install commands show (and the README's screenshots)
    )
    app = create_app(settings)
    hub: Hub = app.state.hub
    services.create_user(hub, "alice")
    services.create_user(hub, "bob")
    alice = services.create_token(hub, "alice", scopes=["publish"], name="seed")[0]
    bob = services.create_token(hub, "bob", scopes=["publish"])[0]
    with serve_app(app) as url:
        yield Site(url=url, hub=hub, alice=alice, bob=bob, tmp=tmp)
