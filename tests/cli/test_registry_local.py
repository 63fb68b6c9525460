"""The endpoint registry (library), the local model resolution, and the real SmolLM2 end-to-end run."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.cli._helpers import (
    ROOT,
    Result,
    assert_one_line_error,
    clean_env,
    read_results,
    run_cli,
    run_dirs,
    script,
)
from verifiers.clients.local_model import (
    LocalModelError,
    LocalModelServer,
    check_server_installed,
    is_local_model,
    resolve_model_file,
)
from verifiers.clients.registry import EndpointRegistry, RegistryError


def test_registry_tables_and_replicas(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.toml"
    path.write_text(
        """
[gpt-4.1-mini]
url = "https://api.openai.com/v1"
key = "OPENAI_API_KEY"

[[qwen]]
model = "Qwen/Qwen3-4B"
url = "http://127.0.0.1:8000/v1"
[[qwen]]
model = "Qwen/Qwen3-4B"
url = "http://127.0.0.1:8001/v1"
"""
    )
    reg = EndpointRegistry.load(path)
    assert reg.aliases == ["gpt-4.1-mini", "qwen"]
    single = reg.endpoints("gpt-4.1-mini", {"OPENAI_API_KEY": "k"})
    assert [(e.base_url, e.api_key, e.model) for e in single] == [
        ("https://api.openai.com/v1", "k", "gpt-4.1-mini")
    ]
    replicas = reg.endpoints("qwen", {})
    assert [e.base_url for e in replicas] == ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"]
    assert {e.model for e in replicas} == {"Qwen/Qwen3-4B"} and {e.api_key for e in replicas} == {None}
    # -k overrides every replica's key variable.
    assert {e.api_key for e in reg.endpoints("qwen", {"X": "y"}, key_var="X")} == {"y"}
    with pytest.raises(RegistryError, match="OPENAI_API_KEY"):
        reg.endpoints("gpt-4.1-mini", {})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[a]\nmodel = 'x'\n", "needs a 'url'"),
        ("[a]\nurl = 'u'\napi_key = 'secret'\n", "unknown field"),
        ("a = 3\n", "must be a table"),
        ("[a\n", "not valid TOML"),
    ],
)
def test_registry_errors(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "e.toml"
    path.write_text(text)
    with pytest.raises(RegistryError, match=match):
        EndpointRegistry.load(path)


def test_local_model_names(tmp_path: Path) -> None:
    assert is_local_model("local/smollm2") and is_local_model("local:/x.gguf")
    assert not is_local_model("gpt-4.1-mini") and not is_local_model("localhost-model")
    with pytest.raises(LocalModelError, match="local/smollm2"):
        resolve_model_file("local/nope")
    with pytest.raises(LocalModelError, match="no model file"):
        resolve_model_file(f"local:{tmp_path}/missing.gguf")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model_file(f"local:{gguf}") == gguf


def test_broken_gguf_gives_a_clear_error(tmp_path: Path, workdir: Path) -> None:
    """A file llama.cpp cannot load: the server exits, vf-eval says so on one line, nothing is left running."""
    try:
        check_server_installed()  # needs the server, not the SmolLM2 file
    except LocalModelError as exc:
        pytest.skip(str(exc))
    gguf = tmp_path / "broken.gguf"
    gguf.write_bytes(b"not a model")
    res, _ = _vf_eval_watching_servers(
        ["cli-env", "-m", f"local:{gguf}", "-n", "1", "-r", "1"], cwd=workdir, tmp_path=tmp_path
    )
    line = assert_one_line_error(res, 1, "the local model server exited", "full log:")
    # The log the message points to is still there to read.
    log = Path(line.rsplit("full log: ", 1)[1].rstrip(")"))
    assert "broken.gguf" in log.read_text()
    log.unlink()


#: Put in the environment of the vf-eval a test starts; the llama.cpp server it starts inherits it. So a
#: test counts its own servers only, never those of other runs on a shared machine.
MARKER = "VF_TEST_RUN_MARKER"


def _llama_servers(marker: str) -> set[int]:
    """The live llama.cpp servers whose environment carries ``MARKER=marker``."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or b"llama_cpp.server" not in (entry / "cmdline").read_bytes():
                continue
            ours = f"{MARKER}={marker}".encode() in (entry / "environ").read_bytes().split(b"\0")
            if ours and "State:\tZ" not in (entry / "status").read_text():  # a zombie has exited
                found.add(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _vf_eval_watching_servers(
    args: list[str], *, cwd: Path, tmp_path: Path, timeout: float = 1200
) -> tuple[Result, set[int]]:
    """Run vf-eval, noting the llama.cpp servers it starts while it runs; asserts none outlives it."""
    marker = uuid.uuid4().hex
    out, err = tmp_path / "vf-eval.out", tmp_path / "vf-eval.err"
    seen: set[int] = set()
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            [script("vf-eval"), *args],
            cwd=cwd,
            env=clean_env(**{MARKER: marker}),
            stdin=subprocess.DEVNULL,
            stdout=o,
            stderr=e,
        )
        deadline = time.monotonic() + timeout  # only a guard against a hang
        while proc.poll() is None:
            seen |= _llama_servers(marker)
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise AssertionError(f"vf-eval {' '.join(args)} did not finish within {timeout:g} s")
            time.sleep(0.2)
    assert not _llama_servers(marker), "a llama.cpp server vf-eval started outlived it"
    return Result(proc.returncode, out.read_text(), err.read_text()), seen


@pytest.mark.smollm
def test_smollm2_end_to_end(smollm: None, tmp_path: Path) -> None:
    """The example environment against the real SmolLM2 server, started and stopped by vf-eval."""
    work = tmp_path / "work"
    (work / "environments").mkdir(parents=True)
    os.symlink(ROOT / "examples" / "tiny_qa", work / "environments" / "tiny_qa")
    res, servers = _vf_eval_watching_servers(
        ["tiny-qa", "-m", "local/smollm2", "-n", "3", "-r", "2", "--json"], cwd=work, tmp_path=tmp_path
    )  # and stopped afterwards: no orphan server
    assert res.code == 0, res.stderr
    assert servers, "no llama.cpp server seen while vf-eval ran (the orphan check would pass vacuously)"
    data = json.loads(res.stdout)
    meta = data["metadata"]
    assert meta["model"] == "local/smollm2"
    assert meta["counts"]["completed"] == 6 and meta["counts"]["errored"] == {}
    assert meta["usage"]["completion_tokens"] > 0
    [run] = run_dirs(work)
    records = read_results(run)
    assert len(records) == 6
    assert all(r["completion"][-1]["role"] == "assistant" and r["completion"][-1]["content"] for r in records)
    assert all(r["reward"] in (0.0, 1.0) for r in records)


@pytest.mark.smollm
def test_local_server_library(smollm: None) -> None:
    import urllib.request

    with LocalModelServer("local/smollm2") as server:
        body = json.loads(urllib.request.urlopen(f"{server.base_url}/models", timeout=60).read())
        assert [m["id"] for m in body["data"]] == ["local/smollm2"]
        assert server.running
    assert not server.running


def test_unknown_local_model_lists_the_choices(workdir: Path) -> None:
    res = run_cli("vf-eval", "cli-env", "-m", "local/tinyllama", cwd=workdir)
    assert_one_line_error(res, 2, "unknown local model", "local/smollm2", "local:/path/to/model.gguf")
    # With a base URL the local model is the one served there (a LocalModelServer of the caller's):
    # nothing answers at this one, which the endpoint check says before the run.
    res = run_cli("vf-eval", "cli-env", "-m", "local/smollm2", "-b", "http://127.0.0.1:9/v1", cwd=workdir)
    assert_one_line_error(
        res, 1, "cannot reach http://127.0.0.1:9/v1", "the local model server (local/smollm2)"
    )
