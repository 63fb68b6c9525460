"""The eval pages (issue 14): a run's page (aggregates, histogram, per-example table, errors, filtered
rollouts) and the rollout viewer (roles, tool calls and results, folded reasoning, reward, error, timing,
usage), escaped and behind the same visibility rules as the API (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from hub_server.eval_view import example_rows, histogram_svg
from tests.hub.conftest import Actors
from tests.hub.test_eval_runs import RUNS, _published, rollout, run_body

API = "/api/v1"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned=1">'


def _tool_rollout() -> dict[str, Any]:
    return rollout(
        1,
        0,
        1.0,
        completion=[
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "I should call the calculator",
                "tool_calls": [{"id": "call_7", "name": "calculator", "arguments": '{"expr": "6*7"}'}],
            },
            {"role": "tool", "content": "42", "tool_call_id": "call_7"},
            {"role": "assistant", "content": f"The answer is 42 {HOSTILE}"},
        ],
        timing={"generation": 1.5, "scoring": 0.25, "total": 1.75},
        usage={"prompt_tokens": 123, "completion_tokens": 45},
    )


def _run(client: TestClient, actors: Actors, visibility: str = "public") -> int:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    run_id = int(client.post(RUNS, json=run_body(h, visibility=visibility), headers=alice).json()["id"])
    rows = [
        rollout(0, 0, 0.0),
        rollout(0, 1, 1.0),
        _tool_rollout(),
        rollout(
            1, 1, None, error={"category": "infra", "type": "RolloutTimeoutError", "message": "took 30 s"}
        ),
        rollout(2, 0, 0.5),
    ]
    assert (
        client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice).status_code
        == 200
    )
    assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).status_code == 200
    return run_id


def test_the_eval_page_shows_aggregates_histogram_examples_and_errors(
    client: TestClient, actors: Actors
) -> None:
    run_id = _run(client, actors)
    page = client.get(f"/alice/demo-env/evals/{run_id}")
    assert page.status_code == 200, page.text
    html = page.text
    assert "org/model-a" in html and "0.1.0" in html
    # (0 + 1 + 1 + 0.5) / 4 with its 95% interval (Wilson's, as everywhere), labelled; no bare "±"
    assert 'id="mean-reward">0.625 <span class="muted">95% CI</span> [0.219, 0.908]' in html
    assert " ± " not in html
    assert "1 infra error" in html
    assert '<svg class="histogram"' in html and html.count('<rect class="bar"') == 10
    assert "RolloutTimeoutError" in html and "took 30 s" in html
    # per example: every rollout's reward (or error) in one row, linking to the viewer
    assert f'href="/alice/demo-env/evals/{run_id}/rollouts/1/0">1.00</a>' in html
    assert f'href="/alice/demo-env/evals/{run_id}/rollouts/1/1">infra</a>' in html
    by_spread = client.get(f"/alice/demo-env/evals/{run_id}?sort=spread").text
    assert by_spread.index('?example_id=0#rollouts">0<') < by_spread.index('?example_id=2#rollouts">2<')
    csp = page.headers["content-security-policy"]
    # scripts only from the hub itself (the copy buttons), never inline
    assert "script-src 'self';" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/copy.js" defer>']
    # the environment page links its best public run per model
    env_page = client.get("/alice/demo-env").text
    assert f'href="/alice/demo-env/evals/{run_id}">eval {run_id}</a>' in env_page


def test_the_rollout_table_filters(client: TestClient, actors: Actors) -> None:
    run_id = _run(client, actors)
    base = f"/alice/demo-env/evals/{run_id}"

    def rows(query: str) -> list[str]:
        html = client.get(f"{base}?{query}").text
        table = html[html.index('<table class="rollouts">') :]
        return re.findall(r'/rollouts/(\d+/\d+)">', table)

    assert rows("") == ["0/0", "0/1", "1/0", "1/1", "2/0"]
    assert rows("min_reward=0.75") == ["0/1", "1/0"]
    assert rows("min_reward=&max_reward=0.6&error=none") == ["0/0", "2/0"]
    assert rows("error=infra") == ["1/1"]
    assert rows("example_id=1") == ["1/0", "1/1"]
    bad = client.get(f"{base}?min_reward=nan")
    assert bad.status_code == 422 and "finite" in bad.text


def test_the_rollout_viewer_shows_the_conversation_escaped(client: TestClient, actors: Actors) -> None:
    run_id = _run(client, actors)
    page = client.get(f"/alice/demo-env/evals/{run_id}/rollouts/1/0")
    assert page.status_code == 200
    html = page.text
    assert '<details class="reasoning"><summary>reasoning</summary>' in html  # folded
    assert "I should call the calculator" in html
    assert "<code>calculator</code>" in html and "{&#34;expr&#34;: &#34;6*7&#34;}" in html
    assert "result of <code>call_7</code>" in html and "42" in html
    assert 'id="reward">1.000' in html
    assert "generation 1.500 s" in html and "123 prompt · 45 completion tokens" in html
    assert "<script>window.pwned" not in html and "&lt;script&gt;window.pwned" in html
    assert 'onerror="window' not in html
    errored = client.get(f"/alice/demo-env/evals/{run_id}/rollouts/1/1").text
    assert "infra · RolloutTimeoutError" in errored and "took 30 s" in errored
    assert client.get(f"/alice/demo-env/evals/{run_id}/rollouts/9/0").status_code == 404
    # a run is only found under its own environment
    assert client.get(f"/alice/other-env/evals/{run_id}").status_code == 404


def test_private_eval_pages_are_404_for_others(client: TestClient, actors: Actors) -> None:
    run_id = _run(client, actors, visibility="private")
    for path in (f"/alice/demo-env/evals/{run_id}", f"/alice/demo-env/evals/{run_id}/rollouts/0/0"):
        anonymous = client.get(path)
        absent = client.get(path.replace(str(run_id), "999999", 1))
        assert anonymous.status_code == absent.status_code == 404
        assert client.get(path, headers=Actors.auth(actors.bob)).status_code == 404
        assert client.get(path, headers=Actors.auth(actors.alice_read)).status_code == 200
    assert f"/evals/{run_id}" not in client.get("/alice/demo-env").text  # not on the public board


def test_page_parts_are_computed_from_numbers_only() -> None:
    svg = str(histogram_svg([0.0, 0.5, 1.0, 1.0]))
    assert svg.startswith("<svg") and svg.count("<rect") == 10 and "<script" not in svg
    assert "No scored rollouts" in str(histogram_svg([]))
    records = [
        {"example_id": 1, "rollout_index": 0, "reward": 0.0},
        {"example_id": 1, "rollout_index": 1, "reward": 1.0},
        {"example_id": 0, "rollout_index": 0, "reward": 0.5},
        {"example_id": 2, "rollout_index": 0, "reward": None, "error": {"category": "model"}},
    ]
    assert [r.example_id for r in example_rows(records, "spread")] == [1, 0, 2]
    assert [r.example_id for r in example_rows(records, "mean")] == [0, 1, 2]
    assert example_rows(records)[2].cells[0].error == "model"


def test_a_run_whose_model_never_called_a_tool_is_flagged_on_its_page_and_the_board(
    client: TestClient, actors: Actors
) -> None:
    h = _published(client, actors)
    alice = Actors.auth(actors.alice)
    flagged: dict[str, int] = {}
    for model, calls in (("org/no-tools", 0.0), ("org/tools", 2.0)):
        body = run_body(h, model=model, run_key=f"run-{model[4:]}-0001")
        run_id = int(client.post(RUNS, json=body, headers=alice).json()["id"])
        rows = [rollout(i, 0, 0.0, metrics={"tool_calls": calls}) for i in range(3)]
        assert (
            client.post(f"{API}/runs/{run_id}/rollouts", json={"rollouts": rows}, headers=alice).status_code
            == 200
        )
        assert client.post(f"{API}/runs/{run_id}/finalize", headers=alice).status_code == 200
        flagged[model] = run_id
    board = client.get(f"{API}/environments/alice/demo-env/leaderboard").json()["entries"]
    assert {e["model"]: e["warnings"] for e in board} == {"org/no-tools": ["no_tool_calls"], "org/tools": []}
    assert client.get(f"{API}/runs/{flagged['org/no-tools']}").json()["warnings"] == ["no_tool_calls"]
    page = client.get(f"/alice/demo-env/evals/{flagged['org/no-tools']}").text
    assert "Warning: the model never called a tool" in page and "no tool calls</span>" in page
    assert "never called a tool" not in client.get(f"/alice/demo-env/evals/{flagged['org/tools']}").text
    assert "no tool calls</span>" in client.get("/alice/demo-env").text  # the board's row says it too
