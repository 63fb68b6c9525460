"""The smoke check of an environment wheel, in a sandbox: install it, ``load_environment()``, one rollout.

``vf-smoke WHEEL`` runs it for a user before a push; the hub runs the same command on every publish
(as a process: the hub shares only ``verifiers.hub`` with the SDK) and stores the ``SmokeReport``.

Inside a fresh sandbox (``verifiers.sandbox``: gVisor, else bubblewrap; no network at all):

1. the SDK base goes into ``/workspace/base``: this interpreter's ``verifiers`` package and the installed
   distributions it requires, copied from this interpreter once per process (a tar held in memory),
   so the check needs no index for them;
2. a throwaway venv (``python3 -m venv --without-pip``) sees the base through a ``.pth`` file (what
   ``--system-site-packages`` would give if the base were the interpreter's own site-packages);
3. requirements the base does not meet are downloaded as wheels on the host, from the given index only,
   at most ``max_dependency_bytes`` of them (pip is stopped past that), kept on disk and streamed into the
   sandbox a chunk at a time; pip (the wheel bundled with the interpreter's ``ensurepip``) installs the
   wheel with ``--no-index --find-links`` of those files: nothing is downloaded inside;
4. ``_smoke_runner.py`` runs as a supervisor that serves a scripted OpenAI-compatible model on the
   sandbox's loopback (one fixed reply with a fresh tag) and a worker process that loads the environment
   with its defaults and runs one rollout; the supervisor judges the worker's claim against what it
   observed and alone writes the report, marked with a one-time key it reads from stdin, so the
   environment cannot forge a pass (no report is a failure).

The outcome is ``passed``, ``failed`` (with the log of every step) or ``skipped`` (no sandbox backend).
"""

from __future__ import annotations

import asyncio
import ensurepip
import functools
import importlib.metadata as md
import importlib.util
import io
import json
import os
import secrets
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from verifiers._urls import redact_url
from verifiers.hub.packaging import requirement_closure
from verifiers.hub.wire import SmokeOutcome, SmokeReport
from verifiers.sandbox import SandboxError, SandboxLimits, get_backend

SDK_DISTRIBUTION = "verifiers-sdk"
LOG_LIMIT = 64 * 1024  # bytes of log kept per check (the tail, where the error is)
MiB = 1024 * 1024
#: Default cap on the wheels of requirements beyond the SDK one check downloads (``--max-dependency-mb``).
MAX_DEPENDENCY_BYTES = 256 * MiB
METADATA_LIMIT = 1 * MiB  # of a dependency wheel's METADATA
STREAM_CHUNK = 4 * MiB
OP_TIMEOUT_S = 120.0
_REPORT_MARK = "VF-SMOKE-REPORT"  # _smoke_runner.REPORT_MARK
_VENV = "/workspace/venv"
_PY_VER = f"{sys.version_info.major}.{sys.version_info.minor}"


def _applies(req: Requirement) -> bool:
    """Whether ``req`` is needed on this interpreter with no extras asked for."""
    if req.marker is None:
        return True
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    return req.marker.evaluate({**env, "extra": ""})


def _requirement_closure(root: str) -> list[md.Distribution]:
    """``root`` and every installed distribution its (non-extra) requirements pull in."""
    return [d for d in requirement_closure(root).values() if d is not None]


@functools.cache
def sdk_base_tar() -> bytes:
    """The SDK base as an uncompressed tar (import trees at its root, like a site-packages directory)."""
    buf = io.BytesIO()
    added: set[str] = set()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(path: Path, arcname: str) -> None:
            if arcname not in added and path.is_file():
                added.add(arcname)
                tar.add(path, arcname=arcname, recursive=False)

        for dist in _requirement_closure(SDK_DISTRIBUTION):
            for rel in dist.files or []:
                # An editable install's .pth points at a source tree the sandbox cannot see.
                # Test suites are not needed to import a package (sympy's alone are tens of MB).
                if rel.suffix == ".pth" or ".." in rel.parts or "tests" in rel.parts:
                    continue
                add(Path(str(dist.locate_file(rel))), rel.as_posix())
        # The SDK's import package itself, wherever it lives (a source tree when installed editable).
        spec = importlib.util.find_spec("verifiers")
        assert spec is not None and spec.origin is not None
        pkg = Path(spec.origin).parent
        for path in sorted(pkg.rglob("*")):
            add(path, f"verifiers/{path.relative_to(pkg).as_posix()}")
    return buf.getvalue()


@functools.cache
def _base_versions() -> dict[str, str]:
    return {canonicalize_name(d.metadata["Name"]): d.version for d in _requirement_closure(SDK_DISTRIBUTION)}


def _wheel_metadata(wheel: bytes | Path) -> str | None:
    """The wheel's METADATA, read with a length bound (a wheel from an index may be hostile: only stored
    and deflate members, whose decompression stops at the length asked for)."""
    with zipfile.ZipFile(io.BytesIO(wheel) if isinstance(wheel, bytes) else wheel) as zf:
        info = next(
            (
                i
                for i in zf.infolist()
                if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
            ),
            None,
        )
        if info is None or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            return None
        with zf.open(info) as f:
            return f.read(METADATA_LIMIT).decode(errors="replace")


def requirements_beyond_base(wheel: bytes | Path) -> list[str]:
    """The wheel's requirements (no extras) that the SDK base does not satisfy."""
    text = _wheel_metadata(wheel)
    metadata = Parser().parsestr(text) if text is not None else None
    have = _base_versions()
    missing: list[str] = []
    specs = (metadata.get_all("Requires-Dist") if metadata is not None else None) or []
    for spec in specs:
        req = Requirement(spec)
        if not _applies(req):
            continue
        version = have.get(canonicalize_name(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            missing.append(spec)
    return missing


def _bytes_under(*directories: Path) -> int:
    return sum(p.stat().st_size for d in directories for p in d.rglob("*") if p.is_file())


async def _download(
    requirements: list[str], index_url: str, dest: Path, timeout_s: float, budget: int
) -> tuple[str | None, str]:
    """``pip download`` of wheels on the host, from ``index_url`` only (the hub's own /simple/), into
    ``dest``: (None, log) when done, else (why, log). pip is stopped as soon as what it has written (its
    temporary files included) exceeds ``budget`` bytes, so a ``torch`` requirement costs neither gigabytes
    of disk nor minutes of download."""
    cmd = [sys.executable, f"{_pip_wheel()}/pip", "download", "--only-binary", ":all:", "--no-input", "--no-deps",
           "--disable-pip-version-check", "--isolated", "--index-url", index_url, "--dest", str(dest),
           *requirements]  # fmt: skip
    scratch = dest / ".pip-tmp"
    scratch.mkdir()
    before = _bytes_under(dest)
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    reader = asyncio.ensure_future(proc.communicate())
    why: str | None = None
    deadline = time.monotonic() + timeout_s
    while not reader.done():
        await asyncio.wait([reader], timeout=0.2)
        if reader.done():
            break
        if await asyncio.to_thread(_bytes_under, dest) - before > budget:
            why = f"the requirements beyond the SDK are larger than {budget // MiB} MB (the check's cap)"
        elif time.monotonic() > deadline:
            why = "downloading the requirements beyond the SDK timed out"
        if why:
            proc.kill()
            break
    out, _ = await reader
    await proc.wait()
    log = f"$ {' '.join(cmd)}  # requirements beyond the SDK\n{out.decode(errors='replace')}"
    if why is None and _bytes_under(dest) - before > budget:
        why = f"the requirements beyond the SDK are larger than {budget // MiB} MB (the check's cap)"
    if why is None and proc.returncode != 0:
        why = f"cannot get {', '.join(requirements)} from {redact_url(index_url)}"
    shutil.rmtree(scratch, ignore_errors=True)
    return why, log + (f"\n[{why}]" if why else "")


async def _stream_into(sb: Any, path: Path, dest: str) -> None:
    """Copy a host file into the sandbox a chunk at a time (the sandbox API writes whole files from
    memory: a 200 MB dependency would be held several times over)."""
    with path.open("rb") as f:
        first = True
        while chunk := f.read(STREAM_CHUNK):
            op = 'cat > "$1"' if first else 'cat >> "$1"'
            r = await sb.exec(["/bin/sh", "-c", op, "sh", dest], stdin=chunk, timeout=OP_TIMEOUT_S)
            if r.exit_code != 0:
                raise SandboxError(f"copying {path.name} into the sandbox failed: {r.stderr.strip()[-300:]}")
            first = False


def _pip_wheel() -> str:
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if not bundled:
        raise RuntimeError("this interpreter has no bundled pip wheel (ensurepip/_bundled)")
    return str(bundled[-1])


def _tail(text: str) -> str:
    data = text.encode()
    return text if len(data) <= LOG_LIMIT else "…\n" + data[-LOG_LIMIT:].decode(errors="replace")


async def run_smoke_check(
    wheel_filename: str,
    wheel_data: bytes,
    *,
    backend: str | None = None,
    timeout_s: float = 300.0,
    index_url: str | None = None,
    max_dependency_bytes: int = MAX_DEPENDENCY_BYTES,
) -> SmokeReport:
    """Check one wheel; never raises for a broken environment or a missing sandbox (that is the result).

    Requirements beyond the SDK base are downloaded as wheels on the host from ``index_url`` alone (the
    hub's own simple index, which falls through to its upstream; for a user, any index), at most
    ``max_dependency_bytes`` of them, kept on disk and streamed to pip inside as files. The verdict is
    the report of the runner's supervisor, authenticated by a key the environment never sees
    (``_smoke_runner``); no report is a failure."""
    started = time.monotonic()
    lines: list[str] = []

    def result(status: SmokeOutcome, reason: str, backend_name: str | None) -> SmokeReport:
        log = _tail("\n".join(lines))
        took = time.monotonic() - started
        return SmokeReport(status=status, reason=reason, log=log, duration_s=took, backend=backend_name)

    try:
        sandboxes = get_backend(backend)
    except SandboxError as exc:
        return result("skipped", f"no sandbox backend on this machine: {exc}", None)
    env_id = str(parse_wheel_filename(wheel_filename)[0])
    limits = SandboxLimits(
        timeout_s=timeout_s, memory_mb=2048, cpu_s=int(timeout_s), max_procs=128, max_file_mb=512,
        max_open_files=1024, max_output_bytes=256 * 1024, workspace_mb=1024, tmp_mb=256,
    )  # fmt: skip
    runner = (Path(__file__).parent / "_smoke_runner.py").read_bytes()
    deadline = started + timeout_s
    # PYTHONNOUSERSITE: a PYTHON* variable keeps the sandbox agent's in-process fast path away, so the
    # venv's interpreter really starts (and reads its site-packages and our .pth).
    # VF_SANDBOX_BACKEND=local: an environment that runs code in sandboxes of its own (code-env) gets plain
    # subprocesses, contained by this sandbox (no nesting of gVisor/bubblewrap inside it).
    env = {"HOME": "/workspace", "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1", "PIP_NO_INPUT": "1",
           "VF_SANDBOX_BACKEND": "local", "VF_SANDBOX_DIR": "/tmp/vf-sandboxes"}  # fmt: skip

    output = ""

    async def step(title: str, argv: list[str], stdin: str | None = None) -> bool:
        nonlocal output
        lines.append(f"$ {' '.join(argv)}  # {title}")
        left = max(1.0, deadline - time.monotonic())
        r = await sb.exec(argv, timeout=left, env=env, stderr_to_stdout=True, stdin=stdin)
        output = r.stdout
        lines.append(r.stdout.rstrip())
        if r.timed_out:
            lines.append(f"[timed out after {timeout_s:.0f} s]")
        elif r.exit_code != 0:
            lines.append(f"[exit status {r.exit_code}]")
        return r.exit_code == 0 and not r.timed_out

    with tempfile.TemporaryDirectory(prefix="vf-smoke-wheels-") as tmp:
        wheelhouse = Path(tmp)
        extra = requirements_beyond_base(wheel_data)
        if extra and index_url:
            # Level by level with --no-deps: what the base has (the SDK itself included) is never fetched.
            fetched: set[str] = set()
            while extra:
                level = wheelhouse / f"level-{len(fetched)}"
                level.mkdir()
                left = max(1.0, deadline - time.monotonic())
                budget = max_dependency_bytes - _bytes_under(wheelhouse) + _bytes_under(level)
                why, out = await _download(extra, index_url, level, left, budget)
                lines.append(out.rstrip())
                if why is not None:
                    return result("failed", f"install: {why}"[:500], None)
                fetched |= {canonicalize_name(Requirement(r).name) for r in extra}
                wanted = {r for p in level.glob("*.whl") for r in requirements_beyond_base(p)}
                extra = sorted(r for r in wanted if canonicalize_name(Requirement(r).name) not in fetched)
        elif extra:
            lines.append(f"[requirements beyond the SDK, and no index to get them from: {', '.join(extra)}]")
        key = secrets.token_hex(16)
        try:
            base = await asyncio.to_thread(sdk_base_tar)  # built once per process (~2 s)
            async with await sandboxes.create(limits) as sb:
                await sb.upload_bundle(base, dest="base")
                await sb.upload_files({f"wheels/{wheel_filename}": wheel_data, "runner.py": runner})
                dependencies = await asyncio.to_thread(lambda: sorted(wheelhouse.glob("level-*/*.whl")))
                for dependency in dependencies:
                    await _stream_into(sb, dependency, f"wheels/{dependency.name}")
                if not await step("throwaway venv", ["python3", "-m", "venv", "--without-pip", _VENV]):
                    return result("failed", "could not create the venv", sandboxes.name)
                await sb.write_file(
                    f"venv/lib/python{_PY_VER}/site-packages/_vf_smoke_base.pth", "/workspace/base\n"
                )
                pip = [f"{_VENV}/bin/python", f"{_pip_wheel()}/pip", "install", "--no-index", "--no-cache-dir",
                       "--disable-pip-version-check", "--find-links", "/workspace/wheels",
                       f"/workspace/wheels/{wheel_filename}"]  # fmt: skip
                if not await step("install the wheel", pip):
                    errors = [ln for ln in output.splitlines() if ln.startswith("ERROR:")]
                    why = errors[-1].removeprefix("ERROR:").strip() if errors else "see the log"
                    return result("failed", f"install: {why}"[:500], sandboxes.name)
                await step(
                    "load_environment() and one rollout",
                    [f"{_VENV}/bin/python", "runner.py", env_id],
                    stdin=key + "\n",
                )
        except SandboxError as exc:
            lines.append(f"[sandbox error: {exc}]")
            return result("failed", f"the sandbox failed: {exc}", sandboxes.name)
    report = supervisor_report(output, key)
    if lines and key in lines[-1]:  # the key is spent; the log keeps the verdict, not the key
        lines[-1] = lines[-1].replace(f"{_REPORT_MARK} {key} ", f"{_REPORT_MARK} ")
    if report is None:
        return result(
            "failed",
            "run: no report from the check's supervisor (the environment's process may have killed it or "
            "exited the sandbox's command); see the log",
            sandboxes.name,
        )
    if report.get("ok"):
        return result("passed", "", sandboxes.name)
    stage, error = report.get("stage", "run"), report.get("error") or "see the log"
    return result("failed", f"{stage}: {error}"[:500], sandboxes.name)


def supervisor_report(output: str, key: str) -> dict[str, object] | None:
    """The runner supervisor's report in ``output``: the last line ``VF-SMOKE-REPORT <key> {json}``.
    Lines without the key (anything the environment printed) are ignored; None when there is none."""
    mark = f"{_REPORT_MARK} {key} "
    for line in reversed(output.splitlines()):
        if line.startswith(mark):
            try:
                value = json.loads(line[len(mark) :])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
