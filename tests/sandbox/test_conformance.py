"""The same abuse cases against every backend: each must be contained and leave the host unchanged.

``local`` is not a security boundary: it runs the cases it can honestly contain (timeouts, output caps,
rlimits, leftovers) and, for network and filesystem isolation, asserts that it is *not* contained and
says so loudly (warning + ``contained=False``).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from verifiers.errors import InfraError, SandboxError
from verifiers.sandbox import Sandbox, SandboxBackend, SandboxLimits, reap_orphans
from verifiers.sandbox._state import state_root

from .conftest import TEST_LIMITS

pytestmark = pytest.mark.sandbox

REPO = Path(__file__).resolve().parents[2]


# --- helpers -----------------------------------------------------------------------------------------
def _meta(sandbox_id: str) -> dict:
    try:
        return json.loads((state_root() / sandbox_id / "meta.json").read_text())
    except OSError:
        return {}


def host_leftovers(sandbox_id: str, uid: int | None = None) -> list[str]:
    """Everything of a sandbox still on the host: processes (by command line, environment or private
    uid) and its state directory."""
    found = []
    needle = sandbox_id.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            env = Path(f"/proc/{name}/environ").read_bytes()
            owner = os.stat(f"/proc/{name}").st_uid
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        if needle in cmd or needle in env or (uid is not None and owner == uid):
            found.append(f"pid {name}: {cmd.replace(NUL, b' ')[:120]!r}")
    if (state_root() / sandbox_id).exists():
        found.append(f"state dir {state_root() / sandbox_id}")
    return found


async def wait_until_clean(sandbox_id: str, uid: int | None = None, wait_s: float = 5.0) -> list[str]:
    """What is left of a sandbox once it had ``wait_s`` to go away (background teardowns included)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = host_leftovers(sandbox_id, uid)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)


NUL = bytes(1)
PY_PROCS_IN_SANDBOX = (
    "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()))"
)


async def sandbox_pids(sb: Sandbox) -> list[int]:
    r = await sb.exec(["python3", "-c", PY_PROCS_IN_SANDBOX])
    assert r.exit_code == 0, r
    return [p for p in json.loads(r.stdout) if p != 1]


def host_path_exists(path: str) -> bool:
    return os.path.exists(path)


def sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def host_pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# --- basics ------------------------------------------------------------------------------------------
async def test_exec_files_and_bundle(sandbox: Sandbox, backend: SandboxBackend) -> None:
    assert sandbox.backend == backend.name
    r = await sandbox.exec(["python3", "-c", "import sys; print(sys.stdin.read().upper())"], stdin="hi")
    assert (r.exit_code, r.stdout, r.timed_out, r.truncated) == (0, "HI\n", False, False)
    assert r.backend == backend.name and r.contained is backend.contained

    # python3 is a real interpreter, never the pyenv shim.
    r = await sandbox.exec(["python3", "-c", "import os, sys; print(os.path.realpath(sys.executable))"])
    real = r.stdout.strip()
    assert "shims" not in real and Path(real).name.startswith("python3")

    await sandbox.write_file("sub/a.py", "import os; print(os.environ['A'], os.getcwd().endswith('sub'))")
    assert (
        await sandbox.read_file("sub/a.py")
        == b"import os; print(os.environ['A'], os.getcwd().endswith('sub'))"
    )
    r = await sandbox.exec(["python3", "a.py"], env={"A": "1"}, cwd="sub")
    assert r.stdout == "1 True\n", r

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"print('from bundle')\n"
        info = tarfile.TarInfo("pkg/main.py")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    assert await sandbox.upload_bundle(buf.getvalue(), dest="up") == 1
    r = await sandbox.exec("python3 up/pkg/main.py && echo $HOME")
    assert r.stdout.splitlines() == ["from bundle", sandbox.workdir]

    r = await sandbox.exec(["does-not-exist-xyz"])
    assert r.exit_code == 127 and "does-not-exist-xyz" in r.stderr
    r = await sandbox.exec("exit 3")
    assert r.exit_code == 3 and not r.ok


async def test_paths_stay_in_the_workspace(sandbox: Sandbox) -> None:
    for bad in ("/etc/passwd", "../x", "a/../../x"):
        with pytest.raises(ValueError):
            await sandbox.write_file(bad, "x")
        with pytest.raises(ValueError):
            await sandbox.read_file(bad)
    with pytest.raises(ValueError):
        await sandbox.exec(["true"], cwd="/")
    # A symlink planted by a command must not lead file operations out of the workspace.
    r = await sandbox.exec("ln -s /etc/passwd link && ln -s /etc linkdir")
    assert r.exit_code == 0, r
    with pytest.raises(PermissionError):
        await sandbox.read_file("link")
    with pytest.raises(PermissionError):
        await sandbox.write_file("linkdir/evil", "x")
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("missing.txt")
    # A tar that tries to escape is refused.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(PermissionError):
        await sandbox.upload_bundle(buf.getvalue())


# --- processes -------------------------------------------------------------------------------------
TREE = textwrap.dedent(
    """
    import os, signal, time
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()  # the grandchild leaves the process group and the session
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open("grandchild.pid", "w").write(str(os.getpid()))
            while True:
                time.sleep(1)
        open("child.pid", "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
    while not (os.path.exists("child.pid") and os.path.exists("grandchild.pid")):
        time.sleep(0.01)
    print("tree started", flush=True)
    time.sleep(1000)
    """
)


async def test_timeout_kills_the_whole_tree(sandbox: Sandbox, backend: SandboxBackend) -> None:
    await sandbox.write_file("tree.py", TREE)
    t0 = time.monotonic()
    r = await sandbox.exec(["python3", "tree.py"], timeout=2)
    assert r.timed_out and r.signal == signal.SIGKILL and r.exit_code == -9, r
    assert "tree started" in r.stdout
    assert time.monotonic() - t0 < 8
    pids = [int(await sandbox.read_text(f)) for f in ("child.pid", "grandchild.pid")]
    if backend.contained:
        assert await sandbox_pids(sandbox) == [], "processes survived the timeout inside the sandbox"
    else:
        assert not [p for p in pids if host_pid_alive(p)], "processes survived the timeout on the host"
    # The sandbox is still usable.
    assert (await sandbox.exec(["echo", "ok"])).stdout == "ok\n"


async def test_processes_do_not_outlive_their_exec(sandbox: Sandbox, backend: SandboxBackend) -> None:
    r = await sandbox.exec("sleep 300 & echo $! > bg.pid; echo started")
    assert r.stdout == "started\n" and r.duration_s < 5
    if backend.contained:
        assert await sandbox_pids(sandbox) == []
    else:
        assert not host_pid_alive(int(await sandbox.read_text("bg.pid")))


FORK_BOMB = textwrap.dedent(
    """
    import os, time
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.001)
    """
)


async def test_fork_bomb_is_contained(sandbox: Sandbox, backend: SandboxBackend) -> None:
    if not backend.contained and os.geteuid() == 0:
        pytest.skip("local backend as root: RLIMIT_NPROC does not bind root, so a fork bomb is not contained")
    await sandbox.write_file("bomb.py", FORK_BOMB)
    r = await sandbox.exec(["python3", "bomb.py"], timeout=3)
    assert r.timed_out, r
    r = await sandbox.exec(["python3", "-c", "print('alive')"])
    assert r.stdout == "alive\n", r
    if backend.contained:
        assert await sandbox_pids(sandbox) == []


async def test_memory_hog_is_stopped(sandbox: Sandbox) -> None:
    r = await sandbox.exec(["python3", "-c", "x = bytearray(2 * 1024**3); print('allocated')"])
    assert r.exit_code != 0 and "allocated" not in r.stdout, r
    assert "MemoryError" in r.stderr, r


async def test_output_flood_is_truncated(sandbox: Sandbox) -> None:
    r = await sandbox.exec(
        ["python3", "-c", "import sys; sys.stdout.write('x' * 5_000_000); print('e', file=sys.stderr)"]
    )
    assert r.exit_code == 0 and r.truncated and r.stdout_truncated and not r.stderr_truncated, r
    assert len(r.stdout) == TEST_LIMITS.max_output_bytes and r.stderr == "e\n"


async def test_cpu_and_file_size_limits(backend: SandboxBackend) -> None:
    limits = SandboxLimits(timeout_s=20, cpu_s=1, max_file_mb=1, memory_mb=256)
    async with await backend.create(limits) as sb:
        t0 = time.monotonic()
        r = await sb.exec(["python3", "-c", "while True: pass"])
        assert not r.timed_out and r.signal in (signal.SIGXCPU, signal.SIGKILL), r
        assert time.monotonic() - t0 < 15
        r = await sb.exec(["python3", "-c", "open('big', 'wb').write(b'x' * 4 * 1024 * 1024)"])
        assert r.exit_code != 0, r
        assert r.signal == signal.SIGXFSZ or "File too large" in r.stderr, r


# --- isolation -------------------------------------------------------------------------------------
async def test_network_is_blocked(
    sandbox: Sandbox, backend: SandboxBackend, caplog: pytest.LogCaptureFixture
) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.setblocking(False)
    port = srv.getsockname()[1]
    code = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "s.sendall(b'escaped'); print('CONNECTED')\n"
    )
    try:
        r = await sandbox.exec(["python3", "-c", code], timeout=10)
        try:
            conn, _ = srv.accept()
            conn.close()
            accepted = True
        except BlockingIOError:
            accepted = False
    finally:
        srv.close()
    if backend.contained:
        assert r.exit_code != 0 and "CONNECTED" not in r.stdout, r
        assert not accepted
    else:
        # Expected NOT contained: the local backend shares the host's network, and says so.
        assert "CONNECTED" in r.stdout and r.contained is False


async def test_host_filesystem_is_untouched(
    sandbox: Sandbox, backend: SandboxBackend, tmp_path: Path
) -> None:
    passwd_before = sha256_of("/etc/passwd")
    if not backend.contained:
        # Expected NOT contained: a local command can write wherever the host user can (probe a test dir).
        probe = tmp_path / "probe"
        r = await sandbox.exec(["python3", "-c", f"open({str(probe)!r}, 'w').write('x')"])
        assert r.exit_code == 0 and probe.exists() and r.contained is False
        return
    targets = [
        f"/etc/vf-probe-{sandbox.id}",
        f"{Path.home()}/vf-probe-{sandbox.id}",
        f"/usr/vf-probe-{sandbox.id}",
        f"{REPO}/vf-probe-{sandbox.id}",
        f"{tmp_path}/vf-probe",
        f"{sys.base_prefix}/vf-probe-{sandbox.id}",
    ]
    code = textwrap.dedent(
        f"""
        import os
        for t in {targets!r}:
            try:
                os.makedirs(os.path.dirname(t), exist_ok=True)
                open(t, "w").write("x")
                print("WROTE", t)
            except OSError as e:
                print("refused", t, e.errno)
        try:
            open("/etc/passwd", "a").write("evil::0:0::/:/bin/sh\\n")
            print("WROTE /etc/passwd")
        except OSError as e:
            print("refused /etc/passwd", e.errno)
        """
    )
    r = await sandbox.exec(["python3", "-c", code])
    assert r.exit_code == 0, r
    assert "WROTE /etc/passwd" not in r.stdout
    appeared = [t for t in targets if host_path_exists(t)]
    assert not appeared, f"appeared on the host: {appeared}"
    assert sha256_of("/etc/passwd") == passwd_before
    # As root inside (the agent's file operations), writes outside the workspace are refused too.
    with pytest.raises(ValueError):
        await sandbox.write_file("/etc/vf-probe", "x")


async def test_sandboxes_cannot_read_each_other(backend: SandboxBackend) -> None:
    async with await backend.create(TEST_LIMITS) as a, await backend.create(TEST_LIMITS) as b:
        await a.write_file("secret.txt", "s3cret")
        a_host_dir = state_root() / a.id
        probe = textwrap.dedent(
            f"""
            import glob, os
            hits = []
            for p in [{a.workdir + "/secret.txt"!r}, {str(a_host_dir)!r}] + glob.glob("/proc/*/root/*/secret.txt"):
                try:
                    if open(p).read() == "s3cret" if os.path.isfile(p) else os.listdir(p):
                        hits.append(p)
                except OSError:
                    pass
            print(hits)
            """
        )
        r = await b.exec(["python3", "-c", probe])
        assert r.exit_code == 0, r
        if backend.contained:
            assert r.stdout.strip() == "[]", r
        else:
            # Expected NOT contained: local workspaces are plain host directories.
            assert "secret.txt" in r.stdout and not b.contained


async def test_local_backend_warns_loudly(caplog: pytest.LogCaptureFixture) -> None:
    from .conftest import require_backend

    backend = require_backend("local")
    with caplog.at_level(logging.WARNING, logger="verifiers.sandbox"):
        async with await backend.create(TEST_LIMITS) as sb:
            r = await sb.exec(["true"])
    assert r.contained is False and sb.contained is False
    assert any("not a security boundary" in rec.getMessage() for rec in caplog.records)


# --- lifecycle -------------------------------------------------------------------------------------
async def test_destroy_leaves_nothing(backend: SandboxBackend) -> None:
    sb = await backend.create(TEST_LIMITS)
    uid = _meta(sb.id).get("uid")
    await sb.write_file("tree.py", TREE)
    running = asyncio.create_task(sb.exec(["python3", "tree.py"], timeout=60))
    await asyncio.sleep(1.0)
    assert host_leftovers(sb.id, uid), "the sandbox should be visible on the host while it runs"
    await sb.destroy()
    with pytest.raises(SandboxError):
        await running
    assert await wait_until_clean(sb.id, uid) == []
    with pytest.raises(SandboxError):
        await sb.exec(["true"])
    await sb.destroy()  # idempotent


async def test_dead_sandbox_raises_infra_error(sandbox: Sandbox) -> None:
    sandbox._kill()  # what a crash of the sandbox looks like from the host
    with pytest.raises(SandboxError) as info:
        for _ in range(50):
            await sandbox.exec(["true"])
            await asyncio.sleep(0.05)
    assert isinstance(info.value, InfraError) and info.value.category == "infra"
    assert not sandbox.alive


async def test_cancelled_exec_keeps_the_sandbox_usable(sandbox: Sandbox) -> None:
    task = asyncio.create_task(sandbox.exec(["sleep", "30"]))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    t0 = time.monotonic()
    r = await sandbox.exec(["echo", "next"])
    assert r.stdout == "next\n" and time.monotonic() - t0 < 5


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from verifiers.sandbox import get_backend, SandboxLimits

    async def main():
        backend = get_backend(sys.argv[1])
        sbs = [await backend.create(SandboxLimits()) for _ in range(2)]
        await sbs[0].write_file("x", "y")
        print(" ".join(sb.id for sb in sbs), flush=True)
        await asyncio.gather(*(sb.exec(["sleep", "120"], timeout=200) for sb in sbs))

    asyncio.run(main())
    """
)


async def test_parent_sigkill_then_reaper(backend: SandboxBackend) -> None:
    proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child we SIGKILL, on purpose not asyncio's
        [sys.executable, "-c", CHILD, backend.name],
        stdout=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
        ids = line.decode().split()
        assert len(ids) == 2, line
        uids = {i: _meta(i).get("uid") for i in ids}
        await asyncio.sleep(1.0)  # let the `sleep`s start
        for i in ids:
            assert host_leftovers(i, uids[i])
    finally:
        proc.kill()
        proc.wait()
    reaped = await asyncio.to_thread(reap_orphans)
    assert set(ids) <= set(reaped)
    for i in ids:
        assert await wait_until_clean(i, uids[i]) == [], f"leftovers of {i} after the reaper"
