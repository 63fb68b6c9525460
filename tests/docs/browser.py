"""The browser half of a document's walk: what the document tells a reader to look at in a browser, checked in
Debian's chromium driven by Playwright (launched as tests/hub/browser/conftest.py does) against the servers the
document's own commands started, once its last command ran (so no second hub or model is paid for).

``WALKS`` maps a document to its walk; a walk gets the ``values`` of the run (ports, URLs, and what the commands
printed and ``capture`` kept) and the workspace, and returns the wall time of each of its steps for the tier's
table. Playwright's sync API holds an event loop on the thread while it is open, so it is opened and closed
inside the walk.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

#: (step, seconds) pairs, in order.
Timings = list[tuple[str, float]]
Walk = Callable[[dict[str, str], Path], Timings]


def browser_missing() -> str | None:
    """Why the browser half cannot run here, or None."""
    from tests.hub.browser.conftest import CHROMIUM

    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (scripts/setup.sh installs it)"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium, or scripts/setup.sh)"
    return None


@contextmanager
def _page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from tests.hub.browser.conftest import ARGS, CHROMIUM, VIEWPORT

    profile = tempfile.mkdtemp(prefix="vf-docs-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True, args=ARGS, viewport=VIEWPORT
            )
            context.set_default_timeout(120_000)  # waits end when their condition holds: this guards a hang
            try:
                yield context.pages[0] if context.pages else context.new_page()
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class _Steps:
    def __init__(self) -> None:
        self.took: Timings = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.took.append((name, time.monotonic() - started))


def _walk_rollouts(page: Any, first_url: str, total: int) -> list[str]:
    """Follow the rollout viewer's "next" links from ``first_url`` to the last rollout, then one "previous";
    returns the headings seen."""
    page.goto(first_url)
    assert page.locator(".rollout-nav").inner_text().count("first rollout") == 1
    seen = [page.locator("h1").inner_text()]
    while page.locator("a[rel=next]").count():
        with page.expect_navigation():
            page.locator("a[rel=next]").click()
        seen.append(page.locator("h1").inner_text())
        assert len(seen) <= total, f"the rollout viewer goes past the run's {total} rollouts: {seen}"
    assert "last rollout" in page.locator(".rollout-nav").inner_text()
    assert f"{total} of {total}" in page.locator(".rollout-nav").inner_text()
    with page.expect_navigation():
        page.locator("a[rel=prev]").click()
    assert page.locator("h1").inner_text() == seen[-2], "previous does not go back one rollout"
    return seen


def _rollout_rows(page: Any) -> list[tuple[str, str, str]]:
    """(example, rollout, reward) of each row of an eval page's rollouts table."""
    rows = []
    for row in page.locator("table.rollouts tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def publish_walk(values: dict[str, str], work: Path) -> Timings:
    """docs/publish.md, step 6 "Look at it": the environment page (README, version, install command and its copy
    button, the leaderboard row of the run made public), the run's page and every rollout with previous/next,
    then ``vf-view``'s pages of the run directory (the same rollouts, nothing published)."""
    hub, run_id = values["hub_url"], values["DOCS_RUN_ID"]
    local = f"http://127.0.0.1:{values['port_a']}"  # vf-view's (classified.py)
    step = _Steps()
    with ExitStack() as stack:
        with step("chromium starts (Playwright, a fresh profile)"):
            page = stack.enter_context(_page())
        try:
            _look_at_it(page, step, hub, run_id, local, work)
        finally:
            with step("chromium stops"):
                stack.close()
    return step.took


def _look_at_it(page: Any, step: _Steps, hub: str, run_id: str, local: str, work: Path) -> None:
    from playwright.sync_api import expect

    rollouts = 8  # the page's `-n 4 -r 2`
    ctx = page.context
    with step("environment page (README, version, install + copy, leaderboard)"):
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=hub)
        response = page.goto(f"{hub}/alice/my-env")  # signed out: what anyone with the URL sees
        assert response is not None and response.status == 200, response and response.status
        readme = page.locator("article.readme")
        heading = (work / "environments/my_env/README.md").read_text().splitlines()[0].removeprefix("# ")
        assert readme.locator("h1").inner_text() == heading == "my-env"
        assert readme.locator("table").count() >= 1 and "|---|" not in readme.inner_text()  # rendered
        assert page.locator("main h2", has_text="Version").first.inner_text().startswith("Version 0.1.0")
        assert page.locator("ul.versions li a").all_inner_texts() == ["0.1.0"]
        install = page.locator(".install code[data-copy]").first
        assert install.inner_text() == "vf-install alice/my-env"
        page.locator(".install .copy-button").first.click()
        # a locator assertion: a string predicate would be evaluated in the page, which its CSP forbids
        expect(page.locator(".install .copy-button").first).to_have_text("Copied")
        assert page.evaluate("navigator.clipboard.readText()") == "vf-install alice/my-env"
        ctx.clear_permissions()
        board = page.locator("table.board tbody tr")
        assert board.count() == 1, board.all_inner_texts()
        cells = board.first.locator("td").all_inner_texts()
        # #, model, version, mean (CI), lower bound, pass@k, scored rollouts, date, run
        assert cells[0] == "1" and cells[1] == "local/smollm2" and cells[2] == "0.1.0", cells
        assert cells[6] == str(rollouts) and cells[8] == f"eval {run_id}", cells
        mean = cells[3].split(" ")[0]
    with step("the run's page (mean, rollouts table)"):
        with page.expect_navigation():
            board.first.locator("a", has_text=f"eval {run_id}").click()
        page.wait_for_url(f"**/alice/my-env/evals/{run_id}")
        assert page.locator(".env-head .badge", has_text="public").count() == 1
        assert page.locator("#mean-reward").inner_text().startswith(mean)
        hub_rows = _rollout_rows(page)
        assert len(hub_rows) == rollouts, hub_rows
        first = page.locator("table.rollouts tbody tr a").first.get_attribute("href")
    with step(f"rollout viewer, {rollouts} rollouts by next, one previous"):
        seen = _walk_rollouts(page, hub + str(first), rollouts)
        expected = [
            f"Example {e}, rollout {r}" for e, r, _ in sorted(hub_rows, key=lambda x: (int(x[0]), int(x[1])))
        ]
        assert seen == expected, seen
    with step("vf-view's pages of outputs/first-run"):
        page.goto(local + "/")
        assert "local run (vf-view)" in page.title() and "eval 0" not in page.title(), page.title()
        assert sorted(_rollout_rows(page)) == sorted(hub_rows)  # the same rollouts, the same rewards
        for href in page.locator("a[href^='/']").evaluate_all("els => els.map(e => e.getAttribute('href'))"):
            assert page.request.get(local + href).status < 400, f"vf-view links {href}"
        first = page.locator("table.rollouts tbody tr a").first.get_attribute("href")
        assert _walk_rollouts(page, local + str(first), rollouts) == seen
        assert "local run (vf-view)" in page.title(), page.title()


WALKS: dict[str, Walk] = {"docs/publish.md": publish_walk}
