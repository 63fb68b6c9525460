"""Every page type at a phone's width (390 px): no horizontal page scroll, whatever the content — a README with
a wide table and a long code line, long model names on the leaderboard, unbroken text in a rollout. Wide
tables and code scroll inside their own box; the page itself never does. Also the copy button of an install
command (JavaScript on) and the rollout viewer's previous/next links, in the browser."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hub_server.auth import COOKIE_NAME
from hub_server.local_view import LocalRun, create_local_app
from tests.hub._dists import Dist
from tests.hub.browser.conftest import VIEWPORT, Site, shot
from tests.hub.conftest import serve_app, web_session
from verifiers.hub import wire

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
LONG_WORD = "unbroken_" * 40
WIDE_README = (
    "# Wide\n\n"
    + "| "
    + " | ".join(f"column {i}" for i in range(14))
    + " |\n|"
    + "---|" * 14
    + "\n| "
    + " | ".join(f"value-{i}-{LONG_WORD[:30]}" for i in range(14))
    + " |\n\n```python\nresult = compute("
    + ", ".join(f"argument_{i}=value_{i}" for i in range(30))
    + ")\n```\n\nA long word: "
    + LONG_WORD
    + "\n\n[a long link](https://example.org/"
    + "segment/" * 30
    + ")\n"
)
SOURCE = ("def load_environment(**kwargs):\n    return " + repr(LONG_WORD * 3) + "\n").encode()
MODELS = ["organisation-with-a-long-name/a-very-long-model-name-instruct-v2-2025", "small/m"]


def _api(site: Site, method: str, path: str, **kwargs: Any) -> Any:
    r = httpx.request(
        method, site.url + path, headers={"Authorization": f"Bearer {site.alice}"}, timeout=30, **kwargs
    )
    assert r.is_success, r.text
    return r.json()


def _rollout(example_id: int, index: int, reward: float) -> dict[str, Any]:
    return {
        "example_id": example_id,
        "rollout_index": index,
        "prompt": [{"role": "user", "content": f"Question {example_id}: {LONG_WORD}"}],
        "completion": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_" + "x" * 60, "name": "lookup_" + "y" * 60, "arguments": LONG_WORD}
                ],
            },
            {"role": "tool", "content": LONG_WORD, "tool_call_id": "call_" + "x" * 60},
            {"role": "assistant", "content": "The answer is " + LONG_WORD},
        ],
        "answer": LONG_WORD,
        "reward": reward,
        "metrics": {"a_metric_with_a_long_name_" + "z" * 30: reward},
        "error": None
        if reward
        else {"category": "infra", "type": "RolloutTimeoutError" + "E" * 40, "message": LONG_WORD},
    }


@pytest.fixture(scope="module")
def wide(site: Site) -> tuple[Site, int]:
    for version in ("0.1.0", "0.2.0"):
        dist = Dist("wide-env", version, "A " + LONG_WORD, WIDE_README, keywords=["wide", "phone"])
        dist.files = {"wide_env/__init__.py": SOURCE}
        wheel, sdist = dist.pair()
        _api(
            site,
            "POST",
            "/api/v1/environments/alice/wide-env/versions",
            files={"wheel": wheel, "sdist": sdist},
        )
    detail = _api(site, "GET", "/api/v1/environments/alice/wide-env")
    content_hash = next(v["content_hash"] for v in detail["versions"] if v["version"] == "0.2.0")
    run_id = 0
    for i, model in enumerate(MODELS):
        body = {
            "run_key": f"phone-run-{i:04d}",
            "version": "0.2.0",
            "content_hash": content_hash,
            "model": model,
            "sampling_args": {"temperature": 0.7, "a_long_sampling_argument_name": LONG_WORD[:80]},
            "env_args": {"split": LONG_WORD[:120]},
            "num_examples": 3,
            "rollouts_per_example": 2,
            "visibility": "public",
        }
        run_id = _api(site, "POST", "/api/v1/environments/alice/wide-env/runs", json=body)["id"]
        rows = [_rollout(e, r, float((e + r + i) % 2)) for e in range(3) for r in range(2)]
        _api(site, "POST", f"/api/v1/runs/{run_id}/rollouts", json={"rollouts": rows})
        _api(site, "POST", f"/api/v1/runs/{run_id}/finalize")
    return site, run_id


@pytest.fixture(scope="module")
def local_viewer(wide: tuple[Site, int]) -> Iterator[str]:
    site, run_id = wide
    run = _api(site, "GET", f"/api/v1/runs/{run_id}")
    rollouts = _api(site, "GET", f"/api/v1/runs/{run_id}/rollouts", params={"per_page": 100})["items"]
    meta = wire.EvalRunCreate(
        run_key="phone-local-0001",
        version=run["version"],
        content_hash=run["content_hash"],
        model=run["model"],
        num_examples=3,
        rollouts_per_example=2,
        sampling_args=run["sampling_args"],
        env_args=run["env_args"],
    )
    records = [wire.RolloutRecord.model_validate(r) for r in rollouts]
    local = LocalRun("wide-env", "completed", meta, records, "/runs/" + LONG_WORD)
    lock = threading.Lock()

    class Source:
        def snapshot(self) -> LocalRun:
            with lock:
                return local

    with serve_app(create_local_app(Source())) as url:
        yield url


def _overflow(page: Any) -> list[str]:
    """What makes the page wider than the viewport: each element that sticks out to the right while its
    parent does not (empty when the page does not scroll sideways)."""
    return list(
        page.evaluate(
            """() => {
              const width = window.innerWidth;
              if (document.documentElement.scrollWidth <= width) return [];
              const out = [`scrollWidth ${document.documentElement.scrollWidth} > ${width}`];
              const clipped = (el) => {
                for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
                  if (getComputedStyle(a).overflowX !== 'visible') return true;
                return false;
              };
              for (const el of document.querySelectorAll('body *')) {
                const right = el.getBoundingClientRect().right;
                const parent = el.parentElement ? el.parentElement.getBoundingClientRect().right : 0;
                if (right > width + 1 && parent <= width + 1 && !clipped(el))
                  out.push(`${el.tagName.toLowerCase()}.${el.className} right=${Math.round(right)}: ` +
                           el.textContent.trim().slice(0, 40));
              }
              return out.slice(0, 12);
            }"""
        )
    )


def test_no_page_scrolls_sideways_at_390_px(wide: tuple[Site, int], local_viewer: str, page: Any) -> None:
    site, run_id = wide
    env = "/alice/wide-env"
    hub_pages = {
        "home": "/",
        "search": "/?q=wide&tag=phone",
        "environment": env,
        "old-version": f"{env}?version=0.1.0",
        "source": f"{env}/source/0.1.0/wide_env/__init__.py",
        "eval-run": f"{env}/evals/{run_id}",
        "eval-run-filtered": f"{env}/evals/{run_id}?error=infra&sort=spread#rollouts",
        "rollout": f"{env}/evals/{run_id}/rollouts/0/0",
        "errored-rollout": f"{env}/evals/{run_id}/rollouts/0/1",
        "login": "/login",
        "api-docs": "/docs",
        "not-found": "/no/such/page/here",
    }
    page.context.clear_cookies()
    page.set_viewport_size(PHONE)
    try:
        wide_pages: dict[str, list[str]] = {}
        for name, path in hub_pages.items():
            page.goto(site.url + path)
            if found := _overflow(page):
                wide_pages[name] = found
            shot(page, f"phone-{name}")
        signed_in = web_session(site.hub, site.alice)
        page.context.add_cookies([{"name": COOKIE_NAME, "value": signed_in, "url": site.url}])
        for name, path in {
            "account": "/account",
            "environment-signed-in": env,
            "eval-run-signed-in": f"{env}/evals/{run_id}",
        }.items():
            page.goto(site.url + path)
            if found := _overflow(page):
                wide_pages[name] = found
            shot(page, f"phone-{name}")
        for name, path in {"local-run": "/", "local-rollout": "/rollouts/0/0"}.items():
            page.goto(local_viewer + path)
            if found := _overflow(page):
                wide_pages[name] = found
            shot(page, f"phone-{name}")
        assert wide_pages == {}, json.dumps(wide_pages, indent=1)
    finally:
        page.context.clear_cookies()
        page.set_viewport_size(VIEWPORT)


def test_the_copy_button_copies_the_install_command(wide: tuple[Site, int], signed_out: Any) -> None:
    from playwright.sync_api import expect

    site, _ = wide
    page = signed_out
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    try:
        page.goto(site.url + "/alice/wide-env")
        command = page.locator(".install code[data-copy]").first
        assert command.inner_text() == "vf-install alice/wide-env"
        button = page.locator(".install .copy-button").first
        button.click()
        expect(button).to_have_text("Copied")  # not a string predicate: the page's CSP forbids evaluating it
        assert page.evaluate("navigator.clipboard.readText()") == "vf-install alice/wide-env"
    finally:
        page.context.clear_permissions()


def test_the_rollout_viewer_walks_the_run(wide: tuple[Site, int], signed_out: Any) -> None:
    site, run_id = wide
    page = signed_out
    page.goto(f"{site.url}/alice/wide-env/evals/{run_id}/rollouts/0/0")
    seen = []
    while True:
        seen.append(page.locator("h1").inner_text())
        following = page.locator("a[rel=next]")
        if following.count() == 0:
            break
        following.click()
    assert len(seen) == 6 and seen[0] == "Example 0, rollout 0" and seen[-1] == "Example 2, rollout 1"
    page.locator("a[rel=prev]").click()
    assert page.locator("h1").inner_text() == "Example 2, rollout 0"


def test_a_metric_value_never_splits_in_the_rollout_sidebar(wide: tuple[Site, int], signed_out: Any) -> None:
    from playwright.sync_api import expect

    site, run_id = wide
    page = signed_out
    page.set_viewport_size(PHONE)
    page.goto(f"{site.url}/alice/wide-env/evals/{run_id}/rollouts/0/0")
    values = page.locator("aside li .value")
    expect(values.first).to_be_visible()
    for i in range(values.count()):
        # an inline value that wrapped has a box per line: "0.0" above "00" was two
        assert values.nth(i).evaluate("el => el.getClientRects().length") == 1, values.nth(i).inner_text()
