"""``vf-install math-env`` away from this checkout: the bare name resolves through the configured hub (a
real ``vf-hub serve --demo``, where the bundled environments are ``verifiers/<name>``) and installs with
the same hash pinning as ``owner/name``; a name found nowhere is one error listing every place looked."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._helpers import clean_env
from tests.hub._demo_server import demo_hub


@pytest.fixture(scope="module")
def hub_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with demo_hub(tmp_path_factory.mktemp("demo-hub") / "data") as (url, _):
        yield url


def _vf_install(venv: Path, *args: str, cwd: Path, hub: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "vf-install"), *args],
        cwd=cwd,  # no ./environments here: the machine has no checkout
        capture_output=True,
        text=True,
        env=clean_env(VF_HUB_URL=hub, VF_HUB_TOKEN=""),
        timeout=300,
    )


def test_a_bare_name_installs_from_the_hub_with_hash_pinning(
    hub_url: str, isolated_venv: Path, tmp_path: Path
) -> None:
    # --upgrade: the isolated venv sees this venv's packages, where math-env is an editable install.
    res = _vf_install(isolated_venv, "math-env", "--upgrade", cwd=tmp_path, hub=hub_url)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "installing math-env from the hub" in res.stdout
    # install_from_hub verified the installed sources against the hub's content hash before saying so.
    assert "verifiers/math-env 0.1.0 (content hash" in res.stdout and "import math_env OK" in res.stdout
    where = subprocess.run(
        [str(isolated_venv / "bin" / "python"), "-c", "import math_env; print(math_env.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(isolated_venv) in where  # the hub's wheel, not this checkout's editable source


def test_a_bare_name_found_nowhere_is_one_error_listing_where_it_looked(
    hub_url: str, isolated_venv: Path, tmp_path: Path
) -> None:
    res = _vf_install(isolated_venv, "no-such-env", cwd=tmp_path, hub=hub_url)
    assert res.returncode != 0
    err = res.stderr
    assert "no environment named 'no-such-env' was found. Looked in:" in err, err
    assert f"the path {tmp_path / 'no-such-env'} (not a directory)" in err
    assert f"{tmp_path / 'environments'}/ (absent)" in err
    assert f"the hub at {hub_url}: no such environment" in err
    assert "verifiers/<name>" in err
    assert "Traceback" not in err and err.count("no environment named") == 1


def test_an_unreachable_hub_is_named_in_the_same_error(isolated_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "environments").mkdir()
    res = _vf_install(isolated_venv, "math-env", cwd=tmp_path, hub="http://127.0.0.1:9")
    assert res.returncode != 0
    assert f"{tmp_path / 'environments'}/ (no math_env/ nor a project named 'math-env')" in res.stderr
    assert "the hub at http://127.0.0.1:9: could not be reached" in res.stderr, res.stderr


def test_a_misspelt_name_gets_a_did_you_mean(hub_url: str, isolated_venv: Path, tmp_path: Path) -> None:
    for spec in ("verifiers/math-evn", "math-envv"):  # owner/name, and a bare name
        res = _vf_install(isolated_venv, spec, cwd=tmp_path, hub=hub_url)
        assert res.returncode != 0
        assert "did you mean verifiers/math-env" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
