"""The smoke check's verdict and its dependencies (issue 24 items 9 and 10), run for real in a sandbox:
an environment cannot forge a pass (the report comes from the runner's supervisor, keyed; no report is a
failure), and the wheels of requirements beyond the SDK are capped and streamed from disk."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hub._dists import Dist
from tests.hub._helpers import smoke_backend
from tests.hub._upstream import Pypiserver, run_pypiserver
from verifiers.envs.smoke_check import run_smoke_check, sdk_base_tar
from verifiers.hub.wire import SmokeReport

MiB = 1024 * 1024
GOOD = b"""import verifiers as vf


def load_environment(**kwargs):
    return vf.SingleTurnEnv(dataset=[{"question": "1+1", "answer": "2"}], **kwargs)
"""
# Each forges the old report ({"ok": true, "stage": "done"} as the last line) its own way, then leaves.
FORGERIES = {
    "print-and-exit": b"""import json, os
def load_environment(**kwargs):
    print(json.dumps({"ok": True, "stage": "done", "reward": 1.0, "error": None}), flush=True)
    os._exit(0)
""",
    "marked-line": b"""import os, sys
def load_environment(**kwargs):
    for guess in ("", "0" * 32, "key"):
        print(f'VF-SMOKE-REPORT {guess} {{"ok": true, "stage": "done"}}', flush=True)
    sys.stdout.flush()
    os._exit(0)
""",
    "kill-the-parent": b"""import json, os, signal
def load_environment(**kwargs):
    print(json.dumps({"ok": True, "stage": "done"}), flush=True)
    os.kill(os.getppid(), signal.SIGKILL)
    os._exit(0)
""",
    "write-the-parents-stdout": b"""import json, os
def load_environment(**kwargs):
    line = (json.dumps({"ok": True, "stage": "done"}) + "\\n").encode()
    for fd in ("1", "2"):
        try:
            with open(f"/proc/{os.getppid()}/fd/{fd}", "wb") as out:
                out.write(line)
        except OSError as exc:
            print("refused:", exc, flush=True)
    os._exit(0)
""",
    "fake-outcome-on-the-channel": b"""import json, os, sys
def load_environment(**kwargs):
    os.write(int(sys.argv[-1]), json.dumps({"ok": True, "stage": "done"}).encode())
    os._exit(0)
""",
    # Issue 33 item 7: the worker's own passing outcome on its pipe, one real request to the model, exit 0.
    "fake-outcome-and-one-request": b"""import json, os, sys, urllib.request
def load_environment(**kwargs):
    claim = {"ok": True, "stage": "done", "reward": 1.0, "error": None, "replies": ["0" * 32]}
    os.write(int(sys.argv[-1]), json.dumps(claim).encode())
    body = json.dumps({"model": "vf-smoke-check", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(sys.argv[-2] + "/chat/completions", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
    print(urllib.request.urlopen(request).read().decode()[:200], flush=True)
    os._exit(0)
""",
}


def check(dist: Dist, **kwargs: object) -> SmokeReport:
    filename, data = dist.wheel()
    report = asyncio.run(run_smoke_check(filename, data, backend=smoke_backend(), timeout_s=300, **kwargs))  # type: ignore[arg-type]
    return report


@pytest.mark.sandbox
@pytest.mark.parametrize("how", sorted(FORGERIES))
def test_an_environment_cannot_forge_a_pass(how: str) -> None:
    name = f"forge-{how}"
    dist = Dist(name=name, files={f"{name.replace('-', '_')}/__init__.py": FORGERIES[how]})
    report = check(dist)
    assert report.status == "failed", report.log[-3000:]
    assert "VF-SMOKE-REPORT" not in report.reason
    if how == "fake-outcome-on-the-channel":
        assert "never called the model" in report.reason
    elif how == "fake-outcome-and-one-request":
        assert 'model_requests": 1' in report.log  # the request did reach the model
        assert report.reason == "rollout: the rollout's completion holds replies the model never sent"
    elif how == "kill-the-parent":
        assert "no report" in report.reason
    else:
        assert "without reporting an outcome" in report.reason


@pytest.mark.sandbox
def test_an_honest_environment_still_passes_and_the_key_stays_out_of_the_log() -> None:
    report = check(Dist(name="honest-env", files={"honest_env/__init__.py": GOOD}))
    assert report.status == "passed", report.log[-3000:]
    assert '"model_requests": 1' in report.log
    marked = [ln for ln in report.log.splitlines() if ln.startswith("VF-SMOKE-REPORT")]
    assert marked and all(ln.startswith("VF-SMOKE-REPORT {") for ln in marked)  # no key


HEAVY = Dist(
    name="heavydep",
    version="1.0",
    dependencies=[],
    files={"heavydep/__init__.py": b"SIZE = 40\n", "heavydep/blob.bin": os.urandom(40 * MiB)},
)
USES_HEAVY = Dist(
    name="smoke-heavy",
    dependencies=["verifiers-sdk", "heavydep"],
    files={"smoke_heavy/__init__.py": b"import heavydep\n" + GOOD},
)


@pytest.fixture(scope="module")
def heavy_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pypiserver]:
    root = tmp_path_factory.mktemp("heavy-index")
    filename, data = HEAVY.wheel()
    (root / filename).write_bytes(data)
    with run_pypiserver(root) as server:
        yield server


@pytest.mark.sandbox
def test_dependencies_beyond_the_cap_fail_the_check(heavy_index: Pypiserver) -> None:
    report = check(USES_HEAVY, index_url=heavy_index.url, max_dependency_bytes=8 * MiB)
    assert report.status == "failed"
    assert "larger than 8 MB" in report.reason, report.log[-2000:]


@pytest.mark.sandbox
def test_dependency_wheels_are_streamed_from_disk(
    heavy_index: Pypiserver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 40 MB dependency used to be held four times over in the checking process (read, tarred, copied,
    sent): now it is copied a chunk at a time, so what the check allocates after the SDK base is in the
    sandbox (the same ~150 MB for every check, built once per process) stays far below its size."""
    from verifiers.sandbox._sandbox import Sandbox

    real = Sandbox.upload_bundle
    after_base: list[int] = []

    async def measured(self: Sandbox, tar_bytes: bytes, dest: str = ".") -> int:
        n = await real(self, tar_bytes, dest)
        if dest == "base":
            tracemalloc.reset_peak()  # from here on: the wheels, pip, the rollout
            after_base.append(tracemalloc.get_traced_memory()[0])
        return n

    monkeypatch.setattr(Sandbox, "upload_bundle", measured)
    sdk_base_tar()
    filename, data = USES_HEAVY.wheel()
    tracemalloc.start()
    try:
        report = asyncio.run(
            run_smoke_check(filename, data, backend=smoke_backend(), timeout_s=300, index_url=heavy_index.url)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.status == "passed", report.log[-3000:]
    assert "heavydep-1.0" in report.log and after_base
    grew = peak - after_base[0]
    assert grew < 24 * MiB, f"the check allocated {grew / MiB:.0f} MiB more for a 40 MiB dependency"


@pytest.mark.sandbox
def test_vf_smoke_prints_one_progress_line_and_the_log_only_on_failure(tmp_path: Path) -> None:
    def vf_smoke(dist: Dist, *flags: str) -> subprocess.CompletedProcess[str]:
        filename, data = dist.wheel()
        (tmp_path / filename).write_bytes(data)
        cmd = [
            sys.executable,
            "-m",
            "verifiers.cli.smoke",
            str(tmp_path / filename),
            "--backend",
            smoke_backend(),
        ]
        return subprocess.run([*cmd, *flags], capture_output=True, text=True, timeout=600)

    good = vf_smoke(Dist(name="quiet-env", files={"quiet_env/__init__.py": GOOD}))
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.stdout.splitlines()[0].startswith("smoke check of quiet_env-0.1.0-py3-none-any.whl: ")
    assert good.stdout.splitlines()[-1].startswith("smoke check: passed")
    assert len(good.stdout.splitlines()) == 2, good.stdout  # no pip lines on a pass
    broken = vf_smoke(Dist(name="loud-env", files={"loud_env/__init__.py": b"raise RuntimeError('boom')\n"}))
    assert broken.returncode == 1 and "boom" in broken.stdout and "smoke check: failed" in broken.stdout
