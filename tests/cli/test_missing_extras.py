"""Every console script in a venv with only the plain install (no extras): ``--help`` works, and a command that
needs an extra says in one line which one and the exact command that installs it — never a traceback.

The venv sees this checkout (``verifiers``, ``hub_server``) and, of this machine's site-packages, only the
distributions the plain install needs (the closure of ``verifiers-sdk``'s base requirements), so ``alembic``,
``nh3``, ``fastapi``, ``llama_cpp``, ``zmq``, ``ray`` … are really missing there. The console scripts are
read from ``pyproject.toml``, so a new one is covered (its ``--help`` at least) without touching this file.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.scripted_server import ScriptedServer
from verifiers._extras import DISTRIBUTION, extra_of_module, extra_requirements, install_command

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
TINY_ENV = """import verifiers as vf


def load_environment(**kwargs):
    rows = [{"question": "1 + 1?", "answer": "2"}]
    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric([lambda completion, answer: 1.0]))
"""


def _base_closure() -> set[str]:
    """The distributions a plain ``pip install verifiers-sdk`` brings (base requirements, recursively)."""
    seen: set[str] = set()
    todo = [DISTRIBUTION]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose python sees the checkout and the plain install's distributions only."""
    base = tmp_path_factory.mktemp("plain")
    site = Path(sysconfig.get_paths()["purelib"])
    farm = base / "site"
    farm.mkdir()
    keep = _base_closure()
    assert {"pydantic", "httpx", "typer"} <= keep and "fastapi" not in keep
    for dist in md.distributions():
        if canonicalize_name(dist.metadata["Name"]) not in keep:
            continue
        for f in dist.files or []:
            top = Path(str(f)).parts[0]
            source = site / top
            if top != ".." and source.exists() and not (farm / top).exists() and not top.endswith(".pth"):
                (farm / top).symlink_to(source)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_vf_plain.pth").write_text(f"{ROOT}\n{farm}\n")
    # this venv's pip, as a venv made with pip has one (only its name is shown in the messages)
    pip = venv / "bin" / "pip"
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
    pip.chmod(0o755)
    probe = subprocess.run(
        [str(py), "-c", "import verifiers.cli.eval, fastapi"], capture_output=True, text=True, cwd=base
    )
    assert "No module named 'fastapi'" in probe.stderr, probe.stderr  # the extras really are absent
    return venv


def _run(venv: Path, script: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    module, func = SCRIPTS[script].split(":")
    code = f"import sys; sys.argv[0] = {script!r}; from {module} import {func}; {func}()"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VF_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # as after `source .venv/bin/activate`
    env["VF_HUB_CONFIG"] = str(cwd / "hub-config.toml")
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_console_script_answers_help_without_extras(
    plain_venv: Path, script: str, tmp_path: Path
) -> None:
    done = _run(plain_venv, script, ["--help"], tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 0:
        assert "Usage" in done.stdout
    else:  # a command that is all one extra (vf-view) says which, in one line
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "extra" in done.stderr and "pip install -e" in done.stderr


def _tiny_project(where: Path) -> Path:
    project = where / "environments" / "tiny_env"
    (project / "tiny_env").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "tiny-env"\nversion = "0.1.0"\n')
    (project / "tiny_env" / "__init__.py").write_text(TINY_ENV)
    (where / "model.gguf").write_bytes(b"GGUF")  # for -m local:model.gguf (the file is there, its server not)
    return where


def _run_dir(where: Path) -> Path:
    run = where / "outputs" / "run"
    run.mkdir(parents=True)
    (run / "metadata.json").write_text("{}")
    return run


#: (script, arguments, the extra it needs, run from the checkout: the message says `-e '.[extra]'`)
NEEDS = [
    ("vf-hub", ["serve"], "hub", True),
    ("vf-hub", ["serve", "--demo", "--port", "0"], "hub", True),
    ("vf-hub", ["serve", "--help"], "hub", True),
    ("vf-hub", ["user", "create", "alice"], "hub", True),
    ("vf-hub", ["token", "create", "alice", "--scope", "publish"], "hub", True),
    ("vf-hub", ["org", "create", "lab"], "hub", True),
    ("vf-hub", ["db", "upgrade"], "hub", True),
    ("vf-hub", ["gc"], "hub", True),
    ("vf-view", ["RUN_DIR"], "hub", False),
    ("vf-serve", ["tiny-env", "--port", "0"], "serve", False),
    ("vf-eval", ["tiny-env", "-m", "local:model.gguf", "-n", "1"], "local", False),
    ("vf-eval", ["tiny-env", "-m", "m", "-b", "MODEL_URL", "-n", "1", "--ray"], "ray", False),
]


@pytest.mark.parametrize(
    ("script", "args", "extra", "in_checkout"),
    NEEDS,
    ids=[f"{n[0]} {' '.join(n[1][:2])} {i}" for i, n in enumerate(NEEDS)],
)
def test_a_command_that_needs_an_extra_says_which_and_how_to_install_it(
    plain_venv: Path, tmp_path: Path, script: str, args: list[str], extra: str, in_checkout: bool
) -> None:
    cwd = ROOT if in_checkout else _tiny_project(tmp_path)
    if args == ["RUN_DIR"]:
        args = [str(_run_dir(tmp_path))]
    with ScriptedServer(rules=[]) as model:  # an endpoint that answers: the extra is what is missing
        done = _run(plain_venv, script, [model.url if a == "MODEL_URL" else a for a in args], cwd)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1, done.stderr  # one line, not a traceback or a wall of text
    assert f"[{extra}] extra" in lines[0], lines[0]
    target = "." if in_checkout else str(ROOT)
    assert f"pip install -e '{target}[{extra}]'" in lines[0], lines[0]
    assert not (tmp_path / "outputs" / "evals").exists()  # nothing was started


def test_the_client_verbs_of_vf_hub_need_no_extra(plain_venv: Path, tmp_path: Path) -> None:
    done = _run(plain_venv, "vf-hub", ["login", "--url", "http://127.0.0.1:9", "--token", "vfh_x"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot reach the hub at http://127.0.0.1:9" in done.stderr, done.stderr
    for verb in (["whoami", "--token", "vfh_x"], ["search", "math"], ["logout"]):
        done = _run(
            plain_venv,
            "vf-hub",
            [*verb, "--url", "http://127.0.0.1:9"] if verb[0] != "logout" else verb,
            tmp_path,
        )
        assert "Traceback" not in done.stderr and "extra" not in done.stderr, done.stderr


def test_install_command_names_the_clone_it_was_installed_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert install_command("hub").endswith("install -e '.[hub]'")
    monkeypatch.chdir(tmp_path)
    assert install_command("hub").endswith(f"install -e '{ROOT}[hub]'")


def test_extras_come_from_the_distribution_metadata() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    hub = {canonicalize_name(r.name) for r in extra_requirements("hub")}
    assert hub == {canonicalize_name(Requirement(r).name) for r in declared["hub"]}
    for module, extra in [
        ("alembic", "hub"),
        ("nh3.clean", "hub"),
        ("markdown_it", "hub"),
        ("multipart", "hub"),
        ("llama_cpp", "local"),
        ("zmq", "serve"),
        ("ray", "ray"),
        ("no_such_module", None),
    ]:
        assert extra_of_module(module) == extra, module


def test_the_demo_set_up_installs_the_extras_the_readme_uses_next() -> None:
    """After `bash scripts/demo.sh` the README goes on with vf-hub serve and vf-view (the hub extra) and the
    local model (the local extra): the set-up installs both."""
    script = (ROOT / "scripts" / "demo.sh").read_text()
    installs = re.findall(r'pip install [^\n]*-e "\.\[([a-z,]+)\]"', script)
    assert installs, "scripts/demo.sh installs the project"
    assert {"hub", "local"} <= set(installs[0].split(","))
