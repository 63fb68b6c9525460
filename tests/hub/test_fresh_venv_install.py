"""Plain ``pip install --index-url HUB/simple/ ENV`` (and ``uv pip install``) into a fresh venv, no site packages.

The environment depends on ``verifiers-sdk`` (served by the hub from its own source tree), on ``tinydep``
(only upstream) and on ``shadow-env`` (on the hub as 0.1 *and* upstream as 99.0: the hub's must win). The
upstream is a loopback pypiserver over tiny wheels made here plus the SDK's dependency wheels, which
scripts/setup.sh downloads once (scripts/hub_wheelhouse.py): tests never use the network. SQLite only: the
database plays no part in what is tested here, and each install takes seconds.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub_server.settings import HubSettings
from tests.hub import _upstream as up
from tests.hub._dists import Dist
from tests.hub.conftest import LiveHub, clean_pip_env
from tests.tiers import component_missing

ENV_SOURCE = b"""import shadow_env
import tinydep
import verifiers as vf


def load_environment(**kwargs):
    return vf.SingleTurnEnv(dataset=[{"question": "1+1", "answer": "2"}], **kwargs)
"""
FRESH = Dist(
    name="fresh-env",
    version="0.1.0",
    dependencies=["verifiers-sdk", "tinydep>=1", "shadow-env"],
    files={"fresh_env/__init__.py": ENV_SOURCE},
)
SHADOW_HUB = Dist(
    name="shadow-env",
    version="0.1",
    dependencies=[],
    files={
        "shadow_env/__init__.py": b"ORIGIN = 'hub'\n\n\ndef load_environment(**kwargs):\n    return None\n"
    },
)
CHECK = """
import sys, fresh_env, shadow_env, tinydep, verifiers
assert callable(fresh_env.load_environment)
assert verifiers.__file__.startswith(sys.prefix), verifiers.__file__  # the hub's wheel, not this checkout
from importlib.metadata import version
print(shadow_env.ORIGIN, version("shadow-env"), tinydep.VALUE, version("verifiers-sdk"))
"""


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[up.Pypiserver]:
    wheelhouse = up.wheelhouse_dir()
    wheels = sorted(wheelhouse.glob("*.whl")) if wheelhouse.is_dir() else []
    if not any(w.name.startswith("pydantic-") for w in wheels):
        reason = f"no SDK dependency wheels in {wheelhouse}; run scripts/setup.sh (scripts/hub_wheelhouse.py)"
        component_missing("VF_REQUIRE_WHEELHOUSE", reason)
    root = tmp_path_factory.mktemp("pypi-standin")
    up.write_upstream_packages(root)
    for wheel in wheels:
        up.link_or_copy(wheel, root / wheel.name)
    with up.run_pypiserver(root) as server:
        yield server


@pytest.fixture(params=["sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    import shutil

    target = tmp_path / "hub.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), target)
    return f"sqlite:///{target}"


@pytest.fixture
def settings(
    settings: HubSettings, pypi: up.Pypiserver, tmp_path_factory: pytest.TempPathFactory
) -> HubSettings:
    cache = up.shared_sdk_cache(tmp_path_factory)
    return settings.model_copy(update={"upstream_index": pypi.url, "sdk_cache_dir": cache})


@pytest.fixture
def index(live_hub: LiveHub, tmp_path: Path) -> str:
    from hub_server import services
    from hub_server.services.names import allow_name

    hub = live_hub.hub
    services.create_user(hub, "alice")
    token = services.create_token(hub, "alice", scopes=["publish"])[0]
    # shadow-env is on the upstream too: publishing it needs an admin's allowance (dependency confusion)
    allow_name(hub, "shadow-env", "alice")
    import httpx

    for dist in (SHADOW_HUB, FRESH):
        (wn, wb), (sn, sb) = dist.pair()
        r = httpx.post(
            f"{live_hub.url}/api/v1/environments/alice/{dist.name}/versions",
            files={"wheel": (wn, wb), "sdist": (sn, sb)},
            headers={"Authorization": f"Bearer {token}"},
            timeout=300,
        )
        assert r.status_code == 201, r.text
    return f"{live_hub.url}/simple/"


def fresh_venv(path: Path, *, with_pip: bool) -> Path:
    cmd = [sys.executable, "-m", "venv", str(path)]
    subprocess.run(cmd if with_pip else [*cmd, "--without-pip"], check=True, timeout=120)
    return path / "bin" / "python"


def check_installed(python: Path) -> None:
    out = subprocess.run([str(python), "-I", "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    origin, shadow_version, value, _sdk = out.stdout.split()
    assert (origin, shadow_version, value) == ("hub", "0.1", "42")  # the hub's shadow-env, not upstream 99.0


def test_plain_pip_installs_from_the_hub_alone(index: str, tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "venv", with_pip=True)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-cache-dir", "--index-url", index, "fresh-env"],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    check_installed(python)


def test_uv_pip_installs_from_the_hub_alone(index: str, tmp_path: Path) -> None:
    uv = Path(sys.executable).with_name("uv")
    python = fresh_venv(tmp_path / "venv", with_pip=False)
    proc = subprocess.run(
        [str(uv), "pip", "install", "--python", str(python), "--index-url", index, "fresh-env"],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    check_installed(python)
