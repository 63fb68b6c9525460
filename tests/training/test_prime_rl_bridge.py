"""The bridge package end to end: generated, installed into a fresh venv holding ``verifiers==0.1.12``
(PyPI's release matching prime-rl v0.5.0's pin), loaded with *that* SDK's ``load_environment`` and driven
as v0.5.0's orchestrator drives it (tests/training/bridge_driver.py) against a real ``vf-serve`` and the
scripted vLLM-like server (``token_id:<n>`` logprob tokens, ``prompt_token_ids``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.scripted_server import ScriptedServer
from tests.serve.conftest import LOGIC, REF_PYTHON, Served, start_serve, token_reply
from tests.tiers import component_missing
from verifiers.envs import load_environment
from verifiers.training.prime_rl.bridge import bridge_files, write_bridge
from verifiers.training.prime_rl.spec import EnvEntry

DRIVER = Path(__file__).with_name("bridge_driver.py")


def test_bridge_package_depends_only_on_the_reference_sdk_and_httpx() -> None:
    import tomllib

    entry = EnvEntry(id="math-env", http_port=8100, zmq_port=5100)
    files = bridge_files(entry)
    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["name"] == "math-env-vfbridge"
    assert project["dependencies"] == ["verifiers==0.1.12", "httpx>=0.27"]
    source = files["math_env_vfbridge.py"]
    compile(source, "math_env_vfbridge.py", "exec")
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"__future__", "json", "typing", "httpx", "verifiers"}, imports
    assert "DEFAULT_SERVER_URL = 'http://127.0.0.1:8100'" in source


def _reference_sdk() -> Path:
    ok = REF_PYTHON.exists() and (
        subprocess.run(
            [str(REF_PYTHON), "-c", "import verifiers, verifiers.serve, zmq, msgpack, httpx, datasets, pip"],
            cwd="/",
            capture_output=True,
        ).returncode
        == 0
    )
    if not ok:
        reason = (
            f"the reference SDK venv {REF_PYTHON} (verifiers==0.1.12) is missing; scripts/setup.sh creates it"
        )
        component_missing("VF_REQUIRE_REFERENCE_SDK", reason)
    return REF_PYTHON


MATH = ("math-env", {"num_examples": 4})


@pytest.fixture(scope="module")
def logic_served() -> Iterator[Served]:
    s = start_serve(*LOGIC, "--max-concurrent", "4")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def math_served() -> Iterator[Served]:
    s = start_serve(*MATH, "--max-concurrent", "4")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(handler=token_reply) as server:
        yield server


def _fresh_venv_with_bridges(tmp: Path, entries: list[EnvEntry]) -> Path:
    """A fresh venv whose only third-party packages are the reference SDK's (a ``.pth`` onto .venv-ref's
    site-packages), with the bridge wheel installed by pip from a local file (``--no-index``: pip checks
    that ``verifiers==0.1.12`` and httpx are satisfied, downloads nothing)."""
    ref = _reference_sdk()
    venv = tmp / "prime-rl-venv"
    subprocess.run([str(ref), "-m", "venv", "--without-pip", str(venv)], check=True, cwd="/")
    py = venv / "bin" / "python"
    ref_site = subprocess.run(
        [str(ref), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    ).stdout.strip()
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    ).stdout.strip()
    Path(site, "reference_sdk.pth").write_text(ref_site + "\n")
    wheels = tmp / "wheels"
    for entry in entries:
        pkg = write_bridge(entry, tmp / "packages")
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(wheels), str(pkg)],
            check=True,
            capture_output=True,
            cwd="/",
        )
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", *map(str, sorted(wheels.glob("*.whl")))],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    return py


def _host_port(address: str) -> tuple[str, int]:
    host, port = address.rsplit("//", 1)[-1].rsplit(":", 1)
    return host, int(port)


def _entry(env_id: str, served: Served) -> EnvEntry:
    host, http_port = _host_port(served.http)
    _, zmq_port = _host_port(served.zmq)
    return EnvEntry(id=env_id, host=host, http_port=http_port, zmq_port=zmq_port)


# Two environments: the EnvGroup routing by task and its id numbering are exercised too (one env is the
# first of them).
@pytest.mark.parametrize("envs", [["logic", "math"]])
def test_bridges_in_the_reference_sdk_drive_vf_serve_like_the_orchestrator(
    request: pytest.FixtureRequest, tmp_path: Path, model_server: ScriptedServer, envs: list[str]
) -> None:
    _reference_sdk()
    configs = {"logic": LOGIC, "math": MATH}
    served = {e: request.getfixturevalue(f"{e}_served") for e in envs}
    entries = [_entry(configs[e][0], served[e]) for e in envs]
    py = _fresh_venv_with_bridges(tmp_path, entries)
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "bridges": [
                    {
                        "bridge_id": x.bridge_distribution,
                        "name": x.name,
                        "server_url": x.http_url,
                        "address": served[e].zmq,
                    }
                    for e, x in zip(envs, entries, strict=True)
                ],
                "base_url": model_server.url,
                "model": "m",
            }
        )
    )
    proc = subprocess.run(
        [str(py), str(DRIVER), str(spec)],
        cwd="/",  # never import our `verifiers` from the checkout
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    assert all(f.startswith(str(tmp_path / "prime-rl-venv")) for f in out["bridge_module_files"])

    # Rows: the same prompts, answers and info as each vf-serve's /dataset, in order. The EnvGroup sets
    # `task` to the env name and numbers example ids across environments (the first env keeps ours).
    offset = 0
    for e, entry in zip(envs, entries, strict=True):
        ours = httpx.get(f"{served[e].url}/dataset", params={"split": "train", "limit": 1000}).json()["rows"]
        got = [r for r in out["train_rows"] if r["task"] == entry.name]
        assert len(got) == len(ours)
        for i, (g, w) in enumerate(zip(got, ours, strict=True)):
            assert g["prompt"] == w["prompt"] and g["answer"] == w["answer"]
            assert json.loads(g["info"]) == w["info"]
            assert g["example_id"] == offset + i
        if offset == 0:
            assert [g["example_id"] for g in got] == [w["example_id"] for w in ours]
        offset += len(ours)

    # Outputs: every field the orchestrator reads, consistent token lists, and rewards equal to our
    # engine's (what vf-eval runs) for the same completions.
    want_by_prompt: dict[str, Any] = {}
    for e in envs:
        env = load_environment(configs[e][0], **configs[e][1])
        states = asyncio.run(env.a_generate(env.select_rows(-1, split="train"), model_server.url, "m"))
        want_by_prompt.update({json.dumps(s["prompt"], sort_keys=True): s for s in states})
    digests = out["train"] + [d for g in out["eval"] for d in g]
    assert len(out["train"]) == 4 * len(envs) and [len(g) for g in out["eval"]] == [2] * len(envs)
    for d in digests:
        assert d["error"] is None
        ref = want_by_prompt[json.dumps(d["prompt"], sort_keys=True)]
        assert d["completion"] == ref["completion"]
        assert d["reward"] == ref["reward"] and d["metrics"] == ref["metrics"]
        assert d["token_lengths"] and all(p > 0 and c > 0 for p, c in d["token_lengths"])
    assert {d["task"] for d in digests} == {x.name for x in entries}
