"""Issue 33 item 3: ``install_from_hub`` checks the downloaded wheel before it installs anything, and a
failed install is rolled back. The hub here serves a tampered wheel the way a hub whose blob store (and
perhaps its database) was altered would; nothing of it may land, and its ``.pth`` must never run.

Every look at the target venv after a failure is made on disk, without starting its interpreter (which
would run a planted ``.pth``). Runs against SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from hub_server import services
from hub_server.models import File
from tests.hub._dists import MODULE_SOURCE, Dist
from tests.hub.conftest import LiveHub
from verifiers.hub.install import HubInstallError, install_from_hub


@pytest.fixture
def token(live_hub: LiveHub) -> str:
    services.create_user(live_hub.hub, "alice")
    return services.create_token(live_hub.hub, "alice", scopes=["publish"])[0]


def put(live_hub: LiveHub, token: str, dist: Dist) -> None:
    (wn, wb), (sn, sb) = dist.pair()
    r = httpx.post(
        f"{live_hub.url}/api/v1/environments/alice/{dist.name}/versions",
        files={"wheel": (wn, wb), "sdist": (sn, sb)},
        headers={"Authorization": f"Bearer {token}"},
        timeout=300,
    )
    assert r.status_code == 201, r.text


def site_packages(python: Path) -> Path:
    venv = python.parent.parent
    rel = Path(sysconfig.get_paths()["purelib"]).relative_to(sysconfig.get_paths()["data"])
    return venv / rel


def installed(site: Path) -> set[str]:
    """What of the demo environment (or a planted file) is in ``site`` (on disk, no interpreter)."""
    return {p.name for p in site.iterdir() if p.name.startswith(("demo_env", "zz"))}


def serve_instead(live_hub: LiveHub, version: str, wheel: bytes, *, index_too: bool) -> None:
    """Replace the stored wheel of ``version`` with ``wheel``; with ``index_too`` the hub's record of its
    sha256 (what the index and resolve say) is changed to match."""
    import hashlib

    hub = live_hub.hub
    with hub.db.read() as s:
        row = s.execute(
            select(File.id, File.blob_key).where(File.filename.like(f"demo_env-{version}-%.whl"))
        ).one()
    hub.blobs.put(row.blob_key, wheel)
    if index_too:
        with hub.db.write() as s:
            s.execute(
                update(File)
                .where(File.id == row.id)
                .values(sha256=hashlib.sha256(wheel).hexdigest(), size=len(wheel))
            )


def planted_pth(marker: Path) -> bytes:
    return f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n".encode()


@pytest.mark.parametrize(
    ("how", "match"),
    [
        ("blob", "sha256 mismatch"),  # the index still has the published sha256
        ("blob-and-index", "breaks the hub's wheel rules.*zz.pth"),  # the .pth is refused by the rules
        ("sources-and-index", "hash to .* the hub says"),  # a clean layout, other sources
    ],
)
def test_a_tampered_wheel_is_refused_before_anything_is_installed(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path], how: str, match: str
) -> None:
    put(live_hub, token, Dist())
    marker = tmp_path / "pth-ran"
    evil = Dist(files={"demo_env/__init__.py": MODULE_SOURCE + b"\nEVIL = True\n"})
    extra = {} if how.startswith("sources") else {"zz.pth": planted_pth(marker)}
    serve_instead(live_hub, "0.1.0", evil.wheel(extra=extra)[1], index_too=how != "blob")
    python = make_venv("target")
    with pytest.raises(HubInstallError) as info:
        install_from_hub("alice/demo-env", python=str(python), url=live_hub.url, installer="pip")
    assert not marker.exists(), "the planted .pth ran"
    assert installed(site_packages(python)) == set(), info.value
    assert re.search(match, str(info.value)), info.value


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_a_failed_upgrade_restores_the_previous_version(
    live_hub: LiveHub, token: str, make_venv: Callable[[str], Path], installer: str
) -> None:
    put(live_hub, token, Dist())
    broken = b'raise RuntimeError("broken at import")\n\n' + MODULE_SOURCE
    put(live_hub, token, Dist(version="0.2.0", files={"demo_env/__init__.py": broken}))
    python = make_venv("target")
    first = install_from_hub(
        "alice/demo-env@0.1.0", python=str(python), url=live_hub.url, installer=installer
    )  # type: ignore[arg-type]
    assert first.version == "0.1.0"
    site = site_packages(python)
    before = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    with pytest.raises(HubInstallError, match="broken at import") as info:
        install_from_hub(
            "alice/demo-env", upgrade=True, python=str(python), url=live_hub.url, installer=installer
        )  # type: ignore[arg-type]
    assert "demo-env 0.1.0 is installed again" in str(info.value)
    after = {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert {k for k in after if "demo_env" in k} == {k for k in before if "demo_env" in k}
    assert all(after[k] == v for k, v in before.items() if "demo_env" in k and "__pycache__" not in k)
    assert (site / "demo_env-0.1.0.dist-info").is_dir() and not (site / "demo_env-0.2.0.dist-info").exists()


def test_a_failed_first_install_leaves_nothing(
    live_hub: LiveHub, token: str, make_venv: Callable[[str], Path]
) -> None:
    broken = b'raise RuntimeError("broken at import")\n\n' + MODULE_SOURCE
    put(live_hub, token, Dist(files={"demo_env/__init__.py": broken}))
    python = make_venv("target")
    with pytest.raises(HubInstallError, match="demo-env is not installed, as before"):
        install_from_hub("alice/demo-env", python=str(python), url=live_hub.url, installer="pip")
    assert installed(site_packages(python)) == set()
