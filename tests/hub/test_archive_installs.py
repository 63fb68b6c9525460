"""Issue 33 item 1 against real installers: what ``uv pip install`` and ``pip install`` write from the
hub's index is exactly what the hub checked, and the reported archive (a member whose Info-ZIP Unicode
Path field names ``zz.pth``) is refused on upload — while uv, given it by a plain index, does write
``site-packages/zz.pth``, so the test's archive is the real attack.

Installs go into ``--target`` directories with ``--no-deps`` from loopback indexes: no network, no venv
to build. SQLite only: the database plays no part here.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hub_server.settings import HubSettings
from tests.hub._dists import EPOCH, Dist
from tests.hub._upstream import run_pypiserver
from tests.hub._zips import UNICODE_PATH, Unseekable, build_zip, find, unicode_field, wheel_members
from tests.hub.conftest import LiveHub, clean_pip_env

HELPER = "demo_env/helper.py"
UV = str(Path(sys.executable).with_name("uv"))


def dist(version: str) -> Dist:
    return Dist(version=version, files={**Dist().module_files(), HELPER: b"VALUE = 1\n"})


def field_by_field(d: Dist) -> bytes:
    return build_zip(wheel_members(dist=d))


def repeating_unicode_path(d: Dist) -> bytes:
    ms = wheel_members(dist=d)
    find(ms, HELPER).central_extra = find(ms, HELPER).local_extra = unicode_field(
        UNICODE_PATH, HELPER.encode(), HELPER.encode()
    )
    return build_zip(ms)


def zipfile_written(*, zip64: bool, seekable: bool) -> Callable[[Dist], bytes]:
    def write(d: Dist) -> bytes:
        buf = io.BytesIO()
        sink: io.IOBase = buf if seekable else Unseekable(buf)
        with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as zf:  # type: ignore[arg-type]
            for m in wheel_members(dist=d):
                with zf.open(zipfile.ZipInfo(m.name, date_time=EPOCH), "w", force_zip64=zip64) as f:
                    f.write(m.data)
        return buf.getvalue()

    return write


ACCEPTED: dict[str, tuple[str, Callable[[Dist], bytes]]] = {
    "field-by-field": ("0.1.0", field_by_field),
    "unicode-path-repeating-the-name": ("0.1.1", repeating_unicode_path),
    "zipfile-zip64": ("0.1.2", zipfile_written(zip64=True, seekable=True)),
    "zipfile-data-descriptors": ("0.1.3", zipfile_written(zip64=False, seekable=False)),
}
#: What an installer may add to the .dist-info beside the wheel's own files.
INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json"}


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    target = tmp_path / "hub.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), target)
    return f"sqlite:///{target}"


@pytest.fixture
def settings(settings: HubSettings) -> HubSettings:
    return settings.model_copy(update={"smoke_checks": False})


@pytest.fixture
def token(live_hub: LiveHub) -> str:
    from hub_server import services

    services.create_user(live_hub.hub, "alice")
    return services.create_token(live_hub.hub, "alice", scopes=["publish"])[0]


def publish(live_hub: LiveHub, token: str, d: Dist, wheel: bytes) -> httpx.Response:
    return httpx.post(
        f"{live_hub.url}/api/v1/environments/alice/{d.name}/versions",
        files={"wheel": (f"{d.stem}-py3-none-any.whl", wheel), "sdist": d.sdist()},
        headers={"Authorization": f"Bearer {token}"},
        timeout=300,
    )


def install(installer: str, index: str, spec: str, target: Path) -> set[str]:
    """Install ``spec`` from ``index`` into ``target``; the files written there."""
    if installer == "uv":
        cmd = [UV, "pip", "install", "--python", sys.executable, "--no-deps", "--target", str(target)]
    else:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-compile",
            "--no-cache-dir",
            "--target",
            str(target),
        ]
    proc = subprocess.run(
        [*cmd, "--index-url", index, spec], capture_output=True, text=True, env=clean_pip_env(), timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("installer", ["uv", "pip"])
@pytest.mark.parametrize("variant", sorted(ACCEPTED))
def test_what_the_hub_accepts_installs_exactly_what_it_checked(
    live_hub: LiveHub, token: str, tmp_path: Path, variant: str, installer: str
) -> None:
    version, write = ACCEPTED[variant]
    d = dist(version)
    r = publish(live_hub, token, d, write(d))
    assert r.status_code == 201, r.text
    files = install(installer, f"{live_hub.url}/simple/", f"demo-env=={version}", tmp_path / "target")
    dist_info = f"{d.stem}.dist-info/"
    assert {f for f in files if not f.startswith(dist_info)} == {"demo_env/__init__.py", HELPER}
    assert {f.removeprefix(dist_info) for f in files if f.startswith(dist_info)} <= {
        "METADATA",
        "WHEEL",
        "RECORD",
        *INSTALLER_FILES,
    }


def test_the_reported_attack_is_refused_and_is_real(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    d = dist("0.2.0")
    ms = wheel_members(dist=d)
    find(ms, HELPER).central_extra = find(ms, HELPER).local_extra = unicode_field(
        UNICODE_PATH, HELPER.encode(), b"zz.pth"
    )
    attack = build_zip(ms)
    r = publish(live_hub, token, d, attack)
    assert r.status_code == 400, r.text
    assert "Unicode path extra field" in r.json()["detail"]
    # The same bytes from a plain index: uv's streaming install writes zz.pth into site-packages.
    root = tmp_path / "plain-index"
    root.mkdir()
    (root / f"{d.stem}-py3-none-any.whl").write_bytes(attack)
    with run_pypiserver(root) as plain:
        files = install("uv", plain.url, "demo-env==0.2.0", tmp_path / "target")
    assert "zz.pth" in files, sorted(files)
