"""``vf-view RUN_DIR`` (issue 14): the eval pages for a local run directory made by a real vf-eval run
against the scripted model server, on loopback, following ``results.jsonl`` as it grows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hub_server.local_view import create_local_app
from hub_server.view_command import RunDirectory
from tests.hub._helpers import VF_EVAL, run_python, serving
from tests.hub.test_e2e import make_project
from tests.scripted_server import Rule, ScriptedServer
from verifiers.clients.local_model import free_port

LOOPBACK = "http://127.0.0.1"  # the pages answer loopback Host headers only
RULES = [Rule(match="capital of France", content="Paris"), Rule(match="days are in a week", content="7")]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("view") / "work"
    make_project(work / "environments")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with ScriptedServer(rules=RULES, default="no idea") as model:
        run_python(
            [*VF_EVAL, "demo-env", "-m", "scripted/m", "-b", model.url, "-n", "7", "-r", "2"],
            cwd=work,
            env=env,
        )
    (found,) = [p.parent for p in (work / "outputs").rglob("metadata.json")]
    return found


def test_the_local_pages_show_the_run(run_dir: Path) -> None:
    meta = json.loads((run_dir / "metadata.json").read_text())
    with TestClient(create_local_app(RunDirectory(run_dir)), base_url=LOOPBACK) as client:
        page = client.get("/")
        assert page.status_code == 200
        html = page.text
        assert f'id="mean-reward">{meta["avg_reward"]:.3f}' in html
        assert "local viewer" in html and "nothing is published" in html
        assert '<svg class="histogram"' in html and "scripted/m" in html
        assert "/login" not in html  # no hub navigation on the local pages
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        good = client.get("/?min_reward=1").text
        table = good[good.index('<table class="rollouts">') :]
        assert len(re.findall(r'href="/rollouts/\d+/\d+"', table)) == 4
        rollout = client.get("/rollouts/0/0")
        assert rollout.status_code == 200
        assert "What is the capital of France?" in rollout.text and "Paris" in rollout.text
        assert client.get("/rollouts/99/0").status_code == 404


def test_the_pages_follow_a_growing_results_file(run_dir: Path, tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    (live / "metadata.json").write_text(
        (run_dir / "metadata.json").read_text().replace('"completed"', '"running"')
    )
    lines = (run_dir / "results.jsonl").read_bytes().splitlines(keepends=True)
    results = live / "results.jsonl"
    results.write_bytes(b"".join(lines[:3]))
    with TestClient(create_local_app(RunDirectory(live)), base_url=LOOPBACK) as client:
        assert client.get("/").text.count('href="/rollouts/') >= 3
        assert ">running<" in client.get("/").text
        with results.open("ab") as f:
            f.write(lines[3][:10])  # a line still being written is not read yet
        before = client.get("/").text
        assert "3 rollouts match" in before
        with results.open("ab") as f:
            f.write(lines[3][10:])
            f.writelines(lines[4:])
        assert f"{len(lines)} rollouts match" in client.get("/").text


def test_vf_view_serves_on_loopback(run_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "vf-view.log"
    cmd = [sys.executable, "-m", "hub_server.view_command", str(run_dir), "--port", str(port), "--no-open"]
    with serving(cmd, f"http://127.0.0.1:{port}/", log) as page:
        assert "demo-env" in page.text
        # DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 sends its own name.
        for host in ("attacker.example", f"attacker.example:{port}", f"127.0.0.1.attacker.example:{port}"):
            refused = httpx.get(f"http://127.0.0.1:{port}/rollouts/0/0", headers={"Host": host})
            assert refused.status_code == 400 and "demo-env" not in refused.text, host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            assert httpx.get(f"http://127.0.0.1:{port}/", headers={"Host": host}).status_code == 200, host
    assert f"at http://127.0.0.1:{port}/" in log.read_text()


def test_vf_view_refuses_what_is_not_a_run_directory(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "hub_server.view_command", str(tmp_path), "--no-open"],
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0 and "is not a run directory" in res.stderr and "Traceback" not in res.stderr
