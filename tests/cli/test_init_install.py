"""vf-init and vf-install: the generated package works as generated, installs, and passes its own tests.

Installs go into a throwaway venv (``isolated_venv``), never into the project's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli._helpers import ROOT, assert_one_line_error, clean_env, run_cli
from verifiers.cli.init import package_files


def test_init_scaffolds_a_package(tmp_path: Path) -> None:
    res = run_cli("vf-init", "My-Env", cwd=tmp_path)
    assert res.code == 0, res.stderr
    pkg = tmp_path / "environments" / "my_env"
    files = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*") if p.is_file())
    assert files == ["README.md", "my_env/__init__.py", "pyproject.toml", "tests/test_my_env.py"]
    pyproject = (pkg / "pyproject.toml").read_text()
    assert 'name = "my-env"' in pyproject
    assert '"verifiers-sdk>=0.1"' in pyproject
    assert '[project.entry-points."verifiers.environments"]' in pyproject
    assert 'my-env = "my_env:load_environment"' in pyproject
    assert "[tool.verifiers.eval]" in pyproject
    readme = (pkg / "README.md").read_text()
    for section in ("## Overview", "## Dataset", "## Reward", "## Quickstart", "## Arguments"):
        assert section in readme
    assert "vf-install my-env" in res.stdout


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    assert run_cli("vf-init", "demo-env", cwd=tmp_path).code == 0
    # Unchanged files: a second run is a no-op that succeeds.
    res = run_cli("vf-init", "demo-env", cwd=tmp_path)
    assert res.code == 0 and "up to date" in res.stdout
    readme = tmp_path / "environments" / "demo_env" / "README.md"
    readme.write_text("mine\n")
    res = run_cli("vf-init", "demo-env", cwd=tmp_path)
    assert_one_line_error(res, 2, "README.md", "--force")
    assert readme.read_text() == "mine\n"
    res = run_cli("vf-init", "demo-env", "--force", cwd=tmp_path)
    assert res.code == 0
    assert readme.read_text().startswith("# demo-env")


def test_init_path_option_and_bad_name(tmp_path: Path) -> None:
    res = run_cli("vf-init", "other", "--path", "pkgs", cwd=tmp_path)
    assert res.code == 0, res.stderr
    assert (tmp_path / "pkgs" / "other" / "other" / "__init__.py").is_file()
    res = run_cli("vf-init", "9lives", cwd=tmp_path)
    assert_one_line_error(res, 2, "invalid environment name")


def test_committed_example_is_the_template_output() -> None:
    """examples/tiny_qa (run by scripts/demo.sh) is exactly what `vf-init tiny-qa` generates: the same
    files, nothing more (caches and build leftovers aside). Regenerate it with
    `vf-init tiny-qa --path examples --force` after changing the template."""
    _, _, files = package_files("tiny-qa")
    example = ROOT / "examples" / "tiny_qa"
    for rel, text in files.items():
        assert (example / rel).read_text() == text, rel
    present = {
        str(p.relative_to(example))
        for p in example.rglob("*")
        if p.is_file()
        and not any(
            part.startswith((".", "__pycache__")) or part.endswith(".egg-info")
            for part in p.relative_to(example).parts
        )
    }
    assert present == set(files)


def test_generated_package_installs_and_its_tests_pass(tmp_path: Path, isolated_venv: Path) -> None:
    vbin = isolated_venv / "bin"
    assert run_cli("vf-init", "gen-env", cwd=tmp_path).code == 0
    # Its own tests pass from the checkout, before installing.
    proc = subprocess.run(
        [str(vbin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "environments/gen_env/tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # vf-install NAME finds ./environments/gen_env, installs it editable and checks the import.
    res = subprocess.run(
        [str(vbin / "vf-install"), "gen-env"], cwd=tmp_path, capture_output=True, text=True, env=clean_env()
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "installed gen-env 0.1.0" in res.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    check = subprocess.run(
        [
            str(vbin / "python"),
            "-c",
            "import verifiers as vf; print(sorted(vf.installed_environments())); "
            "env = vf.load_environment('gen-env'); print(env.env_version, len(env.select_rows()))",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert "gen-env" in check.stdout and "0.1.0 8" in check.stdout


def test_install_a_local_path_and_wheel_defaults(tmp_path: Path, isolated_venv: Path) -> None:
    vbin = isolated_venv / "bin"
    assert run_cli("vf-init", "path-env", "--path", "pkgs", cwd=tmp_path).code == 0
    res = subprocess.run(
        [str(vbin / "vf-install"), str(tmp_path / "pkgs" / "path_env")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "installed path-env 0.1.0" in res.stdout and "import path_env OK" in res.stdout
    # A non-editable (wheel) install still carries the [tool.verifiers.eval] defaults.
    uv = shutil.which("uv", path=str(Path(ROOT / ".venv" / "bin"))) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is needed to build and install the wheel here")
    dist = tmp_path / "dist"
    subprocess.run(
        [uv, "build", "-q", "--wheel", "-o", str(dist), str(tmp_path / "pkgs" / "path_env")], check=True
    )
    wheel = next(dist.glob("*.whl"))
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            str(vbin / "python"),
            "--reinstall",
            "--no-deps",
            str(wheel),
        ],
        check=True,
    )
    out = subprocess.run(
        [
            str(vbin / "python"),
            "-c",
            "import json, path_env; from verifiers.envs.loading import eval_defaults; "
            "print(json.dumps({'file': path_env.__file__, 'defaults': eval_defaults('path-env')}))",
        ],
        cwd=isolated_venv,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert "site-packages" in data["file"]
    assert data["defaults"] == {
        "num_examples": 5,
        "rollouts_per_example": 3,
        "sampling_args": {"temperature": 0.7, "max_tokens": 48},
    }


def test_install_errors(tmp_path: Path) -> None:
    (tmp_path / "notpkg").mkdir()
    res = run_cli("vf-install", str(tmp_path / "notpkg"), cwd=tmp_path)
    assert_one_line_error(res, 2, "no pyproject.toml")
    # owner/name goes to the hub; an unreachable hub is one clear line.
    res = run_cli("vf-install", "someone/some-env@>=1.0", "--hub-url", "http://127.0.0.1:9", cwd=tmp_path)
    assert_one_line_error(res, 1, "someone/some-env", "from the hub failed")
    # Usage errors are click's short message on one line, never a traceback (tests/cli/test_cli_errors.py).
    res = run_cli("vf-install", "--bogus", cwd=tmp_path)
    assert_one_line_error(res, 2, "vf-install: error: no such option: --bogus")
    res = run_cli("vf-eval", "x", "-n", "many", cwd=tmp_path)
    assert_one_line_error(res, 2, "vf-eval: error: invalid value")
