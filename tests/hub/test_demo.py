"""``vf-hub serve --demo``: a fresh hub whose first visit shows the bundled environments (published as
``verifiers/<name>``) and a real sample eval run."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.hub._demo_server import demo_hub


def test_demo_hub_shows_the_bundled_environments_and_a_sample_run(tmp_path: Path) -> None:
    with demo_hub(tmp_path / "data") as (url, printed):
        assert "demo: published 6 environments: verifiers/code-env" in printed
        assert "demo: sample eval run verifiers/math-env · local/smollm2 (10 rollouts)" in printed
        assert "skipped" not in printed
        found = httpx.get(f"{url}/api/v1/environments", params={"q": "math"}).json()
        assert "verifiers/math-env" in [e["full_name"] for e in found["items"]]
        detail = httpx.get(f"{url}/api/v1/environments/verifiers/math-env").json()
        assert detail["latest_version"] == "0.1.0"
        home = httpx.get(url, headers={"Accept": "text/html"}).text
        for name in ("math-env", "logic-env", "code-env"):
            assert name in home
        page = httpx.get(f"{url}/verifiers/math-env", headers={"Accept": "text/html"}).text
        assert "local/smollm2" in page  # the sample run is on the leaderboard
