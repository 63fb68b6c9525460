"""End to end, on a real port: vf-init → vf-push → pip/uv install from the simple index → load_environment,
and install_from_hub into another venv. Runs against SQLite and PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from hub_server import services
from tests.hub.conftest import LiveHub, clean_pip_env
from verifiers.hub.client import HubClient
from verifiers.hub.install import HubInstallError, install_from_hub
from verifiers.hub.packaging import module_name

LOAD_CHECK = (
    "import verifiers, {module}; env = {module}.load_environment(); "
    "assert isinstance(env, verifiers.Environment), type(env); print(type(env).__name__)"
)


def make_project(parent: Path, name: str = "demo-env") -> Path:
    """An environment project made by vf-init, as a user starts one."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from verifiers.cli.init import main; main(sys.argv[1:])",
            name,
            "--path",
            str(parent),
        ],
        check=True,
        capture_output=True,
    )
    return parent / module_name(name)


def assert_loads(python: Path, module: str = "demo_env") -> None:
    """``python`` imports ``module`` and its load_environment() returns a verifiers.Environment."""
    run = subprocess.run(
        [str(python), "-c", LOAD_CHECK.format(module=module)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "SingleTurnEnv"


def vf_push(project: Path, url: str, token: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiers.cli.push",
            str(project),
            "--no-isolation",
            "--url",
            url,
            "--token",
            token,
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "VF_HUB_CONFIG": os.devnull},
    )


def bump_version(project: Path, version: str) -> None:
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace('version = "0.1.0"', f'version = "{version}"', 1))


@pytest.fixture
def token(live_hub: LiveHub) -> str:
    services.create_user(live_hub.hub, "alice")
    return services.create_token(live_hub.hub, "alice", scopes=["publish"])[0]


def test_push_then_pip_install_then_install_from_hub(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path]
) -> None:
    project = make_project(tmp_path / "src")
    dry = vf_push(project, live_hub.url, token, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing uploaded" in dry.stdout
    assert httpx.get(f"{live_hub.url}/simple/demo-env/").status_code == 404

    pushed = vf_push(project, live_hub.url, token)
    assert pushed.returncode == 0, pushed.stderr
    assert f"{live_hub.url}/alice/demo-env" in pushed.stdout
    assert "vf-install alice/demo-env@==0.1.0" in pushed.stdout
    assert f"pip install --index-url {live_hub.url}/simple/ demo-env==0.1.0" in pushed.stdout

    # plain pip, the hub as its only index, this machine's pip config ignored
    py1 = make_venv("pip-venv")
    pip = subprocess.run(
        [
            str(py1),
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--index-url",
            f"{live_hub.url}/simple/",
            "demo-env",
            "--no-deps",
        ],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert_loads(py1)

    # install_from_hub into another venv: resolved version and content hash come back, and match the hub
    with HubClient(url=live_hub.url, token=token) as client:
        resolved = client.resolve("alice/demo-env@>=0.1")
    py2 = make_venv("hub-venv")
    result = install_from_hub(
        "alice/demo-env@>=0.1", python=str(py2), url=live_hub.url, token=token, installer="pip"
    )
    assert (result.full_name, result.version, result.installed) == ("alice/demo-env", "0.1.0", True)
    assert result.content_hash == resolved.content_hash
    assert_loads(py2)

    # a second call finds it satisfied; a bare name resolves because names are unique on the hub
    again = install_from_hub("demo-env", python=str(py2), url=live_hub.url, installer="pip")
    assert (again.version, again.installed) == ("0.1.0", False)

    # a new version: the spec picks it, the old one can still be pinned
    bump_version(project, "0.2.0")
    assert vf_push(project, live_hub.url, token).returncode == 0
    upgraded = install_from_hub(
        "demo-env@>=0.1", python=str(py2), url=live_hub.url, installer="pip", upgrade=True
    )
    assert (upgraded.version, upgraded.installed) == ("0.2.0", True)
    pinned = install_from_hub("demo-env@0.1.0", python=str(py2), url=live_hub.url, installer="pip")
    assert pinned.version == "0.1.0"

    # re-publishing an existing version is refused, whatever the bytes
    again_push = vf_push(project, live_hub.url, token)
    assert again_push.returncode == 1 and "409" in again_push.stderr and "immutable" in again_push.stderr


@pytest.mark.skipif(
    shutil.which("uv") is None and not (Path(sys.executable).parent / "uv").exists(), reason="no uv"
)
def test_uv_installs_from_the_index(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path]
) -> None:
    project = make_project(tmp_path / "src")
    assert vf_push(project, live_hub.url, token).returncode == 0
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    py = make_venv("uv-venv")
    proc = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--python",
            str(py),
            "--index-url",
            f"{live_hub.url}/simple/",
            "demo-env",
            "--no-deps",
        ],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert_loads(py)
    # install_from_hub with uv as the installer
    py2 = make_venv("uv-venv-2")
    result = install_from_hub("alice/demo-env", python=str(py2), url=live_hub.url, installer="uv")
    assert (result.installer, result.version) == ("uv", "0.1.0")


def test_vf_install_command_from_the_hub(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path]
) -> None:
    """The user's path: `vf-install owner/name@spec` in a fresh environment, then again (already there)."""
    project = make_project(tmp_path / "src")
    assert vf_push(project, live_hub.url, token).returncode == 0
    py = make_venv("cli-venv")
    env = {
        **clean_pip_env(),
        "VF_HUB_CONFIG": os.devnull,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    cmd = [str(py), "-m", "verifiers.cli.install", "alice/demo-env@>=0.1", "--hub-url", live_hub.url]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "installed: alice/demo-env 0.1.0" in first.stdout and "content hash" in first.stdout
    assert_loads(py)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert second.returncode == 0 and "already installed" in second.stdout
    missing = subprocess.run(
        [str(py), "-m", "verifiers.cli.install", "alice/no-such-env", "--hub-url", live_hub.url],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert missing.returncode != 0
    assert "Traceback" not in missing.stderr and "no-such-env" in missing.stderr


def test_private_environment_needs_the_token(
    live_hub: LiveHub, token: str, tmp_path: Path, make_venv: Callable[[str], Path]
) -> None:
    project = make_project(tmp_path / "src")
    pushed = vf_push(project, live_hub.url, token, "--visibility", "private")
    assert pushed.returncode == 0, pushed.stderr
    py = make_venv("private-venv")
    pip_cmd = [str(py), "-m", "pip", "install", "--no-cache-dir", "--no-deps", "--no-input", "demo-env"]
    anon = subprocess.run(
        [*pip_cmd, "--index-url", f"{live_hub.url}/simple/"],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
    )
    assert anon.returncode != 0  # invisible: pip finds no such project
    host = live_hub.url.removeprefix("http://")
    authed = subprocess.run(
        [*pip_cmd, "--index-url", f"http://__token__:{token}@{host}/simple/"],
        capture_output=True,
        text=True,
        env=clean_pip_env(),
    )
    assert authed.returncode == 0, authed.stdout + authed.stderr
    with pytest.raises(HubInstallError, match="404"):
        install_from_hub(
            "alice/demo-env", python=str(make_venv("anon")), url=live_hub.url, token=None, installer="pip"
        )
    result = install_from_hub(
        "alice/demo-env", python=str(make_venv("authed")), url=live_hub.url, token=token, installer="pip"
    )
    assert result.version == "0.1.0"


def test_push_refusals_are_readable(live_hub: LiveHub, token: str, tmp_path: Path) -> None:
    project = make_project(tmp_path / "src")
    (project / "demo_env" / "__init__.py").write_text("def make():\n    pass\n")
    out = vf_push(project, live_hub.url, token)
    assert out.returncode == 1
    assert "does not define load_environment" in out.stderr
    out = vf_push(project, live_hub.url, "vfh_wrong")
    assert out.returncode == 1 and "401" in out.stderr
