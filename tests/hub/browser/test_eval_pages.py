"""Eval runs in a real browser: a tool-using environment (made with vf-init) published with vf-push, evaluated
with ``vf-eval`` against the scripted model server (``--push`` for one run, ``vf-push --results`` for the
public ones), then the environment's leaderboard chart, the eval page with its reward filter, a rollout and
its tool calls — on the hub, and from the run directory with the local viewer (``vf-view``)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.hub._helpers import VF_EVAL, run_python, serving
from tests.hub.browser.conftest import Site, save_docs_image, shot
from tests.hub.test_e2e import make_project, vf_push
from tests.scripted_server import Reply, ScriptedServer, tool_call
from verifiers.clients.local_model import free_port

pytestmark = pytest.mark.browser

TOOL = '''

FACTS = {"capital of France": "Paris", "days are in a week": "7", "legs does a spider": "8"}


def lookup(question: str) -> str:
    """Look up the answer to a factual question.

    Args:
        question: the question, as asked.
    """
    for key, value in FACTS.items():
        if key in question:
            return value
    return "unknown"
'''


def _tool_env(parent: Path) -> Path:
    """A vf-init project turned into a ToolEnv: the model may call ``lookup`` before it answers."""
    project = make_project(parent, "quiz-env")
    module = project / "quiz_env" / "__init__.py"
    source = module.read_text()
    assert "return vf.SingleTurnEnv(" in source
    source = source.replace(
        "return vf.SingleTurnEnv(", "return vf.ToolEnv(\n        tools=[lookup],\n        max_turns=3,"
    )
    module.write_text(source + TOOL)
    return project


def _model(body: dict[str, Any]) -> Reply:
    """scripted/guess always says Paris; the others look every question up, then answer with the tool's result."""
    messages = body.get("messages") or []
    if body.get("model") == "scripted/guess":
        return Reply("Paris")
    if messages and messages[-1].get("role") == "tool":
        return Reply(f"It is {messages[-1].get('content')}.")
    question = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    return Reply(content=None, tool_calls=[tool_call("lookup", {"question": question})])


@dataclass
class Evals:
    site: Site
    private_run: int  # vf-eval --push (private, alice's)
    run_dir: Path  # its run directory
    public_runs: list[int]


@pytest.fixture(scope="module")
def evals(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Evals:
    work = tmp_path_factory.mktemp("evals") / "work"
    project = _tool_env(work / "environments")
    pushed = vf_push(project, site.url, site.alice, "--visibility", "public")
    assert pushed.returncode == 0, pushed.stderr
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(
        VF_HUB_URL=site.url, VF_HUB_TOKEN=site.alice, VF_HUB_CONFIG=os.devnull, NO_COLOR="1", COLUMNS="200"
    )
    with ScriptedServer(handler=_model) as server:

        def run(model: str, rollouts: str, *extra: str) -> str:
            args = ["quiz-env", "-m", model, "-b", server.url, "-n", "8", "-r", rollouts, *extra]
            return run_python([*VF_EVAL, *args], cwd=work, env=env)

        out = work / "outputs"
        # A different model name for the public tool-using run: the hub tells runs apart by
        # (environment, version, model, started_at to the second), and these start together.
        with ThreadPoolExecutor(3) as pool:
            pushing = pool.submit(run, "scripted/tools", "2", "--push", "-o", str(out / "pushed"))
            others = [
                pool.submit(run, "scripted/lookup", "1", "-o", str(out / "tools")),
                pool.submit(run, "scripted/guess", "1", "-o", str(out / "guess")),
            ]
            pushed_out = pushing.result()
            for f in others:
                f.result()
    found = re.search(r"pushed eval run (\d+) of alice/quiz-env .*\(scripted/tools, private\)", pushed_out)
    assert found, pushed_out
    public = []
    for name in ("tools", "guess"):
        (run_dir,) = [p.parent for p in (work / "outputs" / name).rglob("metadata.json")]
        said = run_python(
            ["-m", "verifiers.cli.push", "--results", str(run_dir), "--visibility", "public"],
            cwd=work,
            env=env,
            timeout=120,
        )
        public.append(int(re.search(r"pushed eval run (\d+)", said).group(1)))  # type: ignore[union-attr]
    (pushed_dir,) = [p.parent for p in (work / "outputs" / "pushed").rglob("metadata.json")]
    return Evals(site, int(found.group(1)), pushed_dir, public)


@pytest.fixture
def as_alice(page: Any, evals: Evals) -> Iterator[Any]:
    page.context.clear_cookies()
    page.goto(evals.site.url + "/login")
    page.fill("input[name=token]", evals.site.alice)
    page.click("main form button[type=submit]")
    page.wait_for_url(evals.site.url + "/")
    yield page
    page.context.clear_cookies()


def test_the_environment_page_charts_the_leaderboard(evals: Evals, page: Any) -> None:
    page.context.clear_cookies()
    page.goto(evals.site.url + "/alice/quiz-env")
    assert page.locator("article.readme h1").count() == 1  # vf-init's README, rendered
    assert [v.inner_text() for v in page.locator("ul.versions li a").all()] == ["0.1.0"]
    chart = page.locator("svg.reward-chart")
    assert chart.locator("rect.bar").count() == 2
    labels = " ".join(chart.locator("text").all_text_contents())
    assert "scripted/lookup" in labels and "scripted/guess" in labels
    board = page.locator("table.board tbody tr")
    assert board.count() == 2 and board.first.locator("td").nth(1).inner_text() == "scripted/lookup"
    assert (
        page.locator("table.runs a", has_text=f"eval {evals.private_run}").count() == 0
    )  # private: not shown
    save_docs_image(shot(page, "environment"), "hub-environment-page.png")
    response = page.goto(f"{evals.site.url}/alice/quiz-env/evals/{evals.private_run}")
    assert response is not None and response.status == 404  # a private run, signed out


def test_a_pushed_eval_filtered_by_reward_and_one_rollout(evals: Evals, as_alice: Any) -> None:
    page = as_alice
    page.goto(evals.site.url + "/alice/quiz-env")
    page.locator("details.all-runs summary").click()
    page.locator("table.runs a", has_text=f"eval {evals.private_run}").click()
    page.wait_for_url(f"**/evals/{evals.private_run}")
    assert page.locator("table.rollouts tbody tr").count() == 16
    shot(page, "eval-run")
    page.fill("form.filters input[name=min_reward]", "1")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**min_reward=1*")
    rows = page.locator("table.rollouts tbody tr")
    assert rows.count() == 6  # three questions the lookup knows, two rollouts each
    rewards = {r.locator("td").nth(2).inner_text() for r in rows.all()}
    assert rewards == {"1.000"}
    rows.first.locator("a").click()
    page.wait_for_url("**/rollouts/**")
    call = page.locator(".message.role-assistant .tool-call").first
    assert "lookup" in call.inner_text() and "question" in call.inner_text()
    assert page.locator(".message.role-tool").count() >= 1
    assert page.locator("#reward").inner_text() == "1.000"
    save_docs_image(shot(page, "rollout"), "hub-rollout-viewer.png")


def test_the_local_viewer_shows_the_same_run(evals: Evals, page: Any, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "vf-view.log"
    cmd = [
        sys.executable,
        "-m",
        "hub_server.view_command",
        str(evals.run_dir),
        "--port",
        str(port),
        "--no-open",
    ]
    base = f"http://127.0.0.1:{port}"
    with serving(cmd, base + "/", log):
        page.goto(base + "/")
        assert page.locator("table.rollouts tbody tr").count() == 16
        page.fill("form.filters input[name=min_reward]", "1")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**min_reward=1*")
        assert page.locator("table.rollouts tbody tr").count() == 6
        page.locator("table.rollouts tbody tr a").first.click()
        page.wait_for_url("**/rollouts/**")
        assert "lookup" in page.locator(".message.role-assistant .tool-call").first.inner_text()
        shot(page, "local-rollout")
