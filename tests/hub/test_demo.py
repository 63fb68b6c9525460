"""``vf-hub serve --demo``: a fresh hub whose first visit shows the bundled environments (published as
``verifiers/<name>``) and a real sample eval run; it says what it is doing while it seeds, publishes the
bundled environments only (never a scratch project lying next to them), and removes the temporary data
dir it made when it is stopped (SIGINT or SIGTERM, also while still seeding)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from hub_server import migrate
from hub_server.context import Hub
from hub_server.demo import BUNDLED, seed_demo
from hub_server.services import search
from hub_server.settings import HubSettings
from tests.hub._demo_server import VF_HUB
from tests.hub._helpers import wait_until_serving
from tests.hub.conftest import ROOT
from tests.hub.test_e2e import make_project
from verifiers.clients.local_model import free_port


def _start_demo(tmp: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``vf-hub serve --demo`` with no --data-dir: it makes its own temporary one (under TMPDIR=tmp)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VF_HUB_")}
    env.update(TMPDIR=str(tmp), VF_HUB_UPSTREAM_INDEX="none", VF_HUB_SMOKE_CHECKS="false")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VF_HUB), "serve", "--demo", "--port", str(port), "--no-access-log"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    return proc, f"http://127.0.0.1:{port}"


def _scratch_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("vf-hub-demo-*"))


def test_demo_hub_shows_the_bundled_environments_and_a_sample_run_and_cleans_up(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    log = tmp_path / "demo.log"
    proc, url = _start_demo(tmp, log)
    try:
        wait_until_serving(f"{url}/healthz", proc, "vf-hub serve --demo", log, timeout=900)
        printed = log.read_text()
        # progress while it seeds: a line before each build and after each publish
        for i, name in enumerate(BUNDLED, start=1):
            assert f"demo: building {name} ({i}/{len(BUNDLED)}) …" in printed, printed
        assert re.search(r"demo: published verifiers/math-env 0\.1\.0 \(\d+ s\)", printed), printed
        assert re.search(rf"demo: published {len(BUNDLED)} environments in \d+ s: verifiers/", printed), (
            printed
        )
        assert "demo: sample eval run verifiers/math-env · local/smollm2 (10 rollouts)" in printed
        assert "skipped" not in printed
        (scratch,) = _scratch_dirs(tmp)
        assert (scratch / "hub.db").is_file()

        found = httpx.get(f"{url}/api/v1/environments", params={"q": "math"}).json()
        assert "verifiers/math-env" in [e["full_name"] for e in found["items"]]
        detail = httpx.get(f"{url}/api/v1/environments/verifiers/math-env").json()
        assert detail["latest_version"] == "0.1.0"
        listed = httpx.get(f"{url}/api/v1/environments", params={"owner": "verifiers", "per_page": 50}).json()
        assert sorted(e["module"] for e in listed["items"]) == sorted(BUNDLED)
        home = httpx.get(url, headers={"Accept": "text/html"}).text
        for name in ("math-env", "logic-env", "code-env"):
            assert name in home
        page = httpx.get(f"{url}/verifiers/math-env", headers={"Accept": "text/html"}).text
        assert "local/smollm2" in page  # the sample run is on the leaderboard
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        code = proc.wait(120)
    assert code == 130, log.read_text()[-2000:]
    assert f"demo: removed its data dir {scratch}" in log.read_text()
    assert _scratch_dirs(tmp) == []


def test_sigterm_while_seeding_removes_the_data_dir(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    log = tmp_path / "demo.log"
    proc, _url = _start_demo(tmp, log)
    try:
        deadline = time.monotonic() + 600
        while "demo: building" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no progress line"
            time.sleep(0.2)
        assert len(_scratch_dirs(tmp)) == 1
    finally:
        proc.terminate()
        code = proc.wait(120)
    assert code == 128 + signal.SIGTERM, log.read_text()[-2000:]
    assert "demo: removed its data dir" in log.read_text()
    assert _scratch_dirs(tmp) == []


@pytest.fixture
def demo_target(tmp_path: Path) -> Hub:
    db = tmp_path / "hub.db"
    migrate.upgrade(f"sqlite:///{db}")
    settings = HubSettings(
        data_dir=tmp_path / "data", database_url=f"sqlite:///{db}", upstream_index="none", smoke_checks=False
    )
    return Hub.from_settings(settings)


def test_the_demo_publishes_the_bundled_environments_only(demo_target: Hub, tmp_path: Path) -> None:
    environments = tmp_path / "environments"
    environments.mkdir()
    (environments / "logic_env").symlink_to(ROOT / "environments" / "logic_env")
    make_project(environments, "my-env")  # a scratch project next to the bundled ones, as vf-init makes it
    lines: list[str] = []
    report = seed_demo(demo_target, environments, runs=tmp_path / "no-runs", progress=lines.append)
    assert report.published == ["verifiers/logic-env"]
    assert lines[0] == "building logic_env (1/1) …" and lines[1].startswith(
        "published verifiers/logic-env 0.1.0"
    )
    with demo_target.db.read() as session:
        assert [e.full_name for e in search(session, None, q="", per_page=50).items] == [
            "verifiers/logic-env"
        ]


def test_the_bundled_list_is_the_tracked_environments() -> None:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "environments/*/pyproject.toml"],
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0 or not listed.stdout.strip():
        pytest.skip("not a git checkout")
    tracked = {Path(p).parent.name for p in listed.stdout.split()}
    assert set(BUNDLED) == tracked
