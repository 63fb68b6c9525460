"""The smoke check of an environment wheel, in a sandbox: install it, ``load_environment()``, one rollout.

``vf-smoke WHEEL`` runs it for a user before a push; the hub runs the same command on every publish
(as a process: the hub shares only ``verifiers.hub`` with the SDK) and stores the ``SmokeReport``.

Inside a fresh sandbox (``verifiers.sandbox``: gVisor, else bubblewrap; no network at all):

1. the SDK base goes into ``/workspace/base``: this interpreter's ``verifiers`` package and the installed
   distributions it requires, copied from this interpreter once per process (a tar held in memory),
   so the check needs no index for them;
2. a throwaway venv (``python3 -m venv --without-pip``) sees the base through a ``.pth`` file (what
   ``--system-site-packages`` would give if the base were the interpreter's own site-packages);
3. pip (the wheel bundled with the interpreter's ``ensurepip``) installs the uploaded wheel with
   ``--no-index --find-links`` of the wheel alone: its requirements must already be met by the base, and
   nothing is downloaded;
4. ``_smoke_runner.py`` starts a scripted OpenAI-compatible model on the sandbox's loopback (one fixed
   reply), loads the environment with its defaults and runs one rollout.

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
import sys
import tarfile
import tempfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from verifiers.hub.wire import SmokeOutcome, SmokeReport
from verifiers.sandbox import SandboxError, SandboxLimits, get_backend

SDK_DISTRIBUTION = "verifiers-sdk"
LOG_LIMIT = 64 * 1024  # bytes of log kept per check (the tail, where the error is)
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
    seen: dict[str, md.Distribution] = {}
    todo = [root]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a requirement the hub itself runs without: the check will say so if it matters
        seen[name] = dist
        todo.extend(req.name for req in map(Requirement, dist.requires or []) if _applies(req))
    return list(seen.values())


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


def requirements_beyond_base(wheel_data: bytes) -> list[str]:
    """The wheel's requirements (no extras) that the SDK base does not satisfy."""
    with zipfile.ZipFile(io.BytesIO(wheel_data)) as zf:
        name = next(
            (n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None
        )
        metadata = Parser().parsestr(zf.read(name).decode(errors="replace")) if name else None
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


async def _download(
    requirements: list[str], index_url: str, dest: Path, timeout_s: float
) -> tuple[bool, str]:
    """``pip download`` of wheels on the host, from ``index_url`` only (the hub's own /simple/)."""
    cmd = [sys.executable, f"{_pip_wheel()}/pip", "download", "--only-binary", ":all:", "--no-input", "--no-deps",
           "--disable-pip-version-check", "--isolated", "--index-url", index_url, "--dest", str(dest),
           *requirements]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return False, f"$ {' '.join(cmd)}\n[timed out]"
    return (
        proc.returncode == 0,
        f"$ {' '.join(cmd)}  # requirements beyond the SDK\n{out.decode(errors='replace')}",
    )


def _read_wheels(directory: Path) -> dict[str, bytes]:
    return {f"wheels/{p.name}": p.read_bytes() for p in directory.glob("*.whl")}


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
) -> SmokeReport:
    """Check one wheel; never raises for a broken environment or a missing sandbox (that is the result).

    Requirements beyond the SDK base are downloaded as wheels on the host from ``index_url`` alone (the
    hub's own simple index, which falls through to its upstream; for a user, any index) and handed to
    pip inside as files."""
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

    async def step(title: str, argv: list[str]) -> bool:
        nonlocal output
        lines.append(f"$ {' '.join(argv)}  # {title}")
        left = max(1.0, deadline - time.monotonic())
        r = await sb.exec(argv, timeout=left, env=env, stderr_to_stdout=True)
        output = r.stdout
        lines.append(r.stdout.rstrip())
        if r.timed_out:
            lines.append(f"[timed out after {timeout_s:.0f} s]")
        elif r.exit_code != 0:
            lines.append(f"[exit status {r.exit_code}]")
        return r.exit_code == 0 and not r.timed_out

    wheels = {f"wheels/{wheel_filename}": wheel_data}
    extra = requirements_beyond_base(wheel_data)
    if extra and index_url:
        # Level by level with --no-deps: what the base has (the SDK itself included) is never fetched.
        fetched: set[str] = set()
        while extra:
            with tempfile.TemporaryDirectory(prefix="vf-smoke-wheels-") as tmp:
                left = max(1.0, deadline - time.monotonic())
                ok, out = await _download(extra, index_url, Path(tmp), left)
                lines.append(out.rstrip())
                if not ok:
                    why = f"install: cannot get {', '.join(extra)} from {index_url}"
                    return result("failed", why[:500], None)
                new = await asyncio.to_thread(_read_wheels, Path(tmp))
            wheels.update(new)
            fetched |= {canonicalize_name(Requirement(r).name) for r in extra}
            wanted = {r for data in new.values() for r in requirements_beyond_base(data)}
            extra = sorted(r for r in wanted if canonicalize_name(Requirement(r).name) not in fetched)
    elif extra:
        lines.append(f"[requirements beyond the SDK, and no index to get them from: {', '.join(extra)}]")
    try:
        base = await asyncio.to_thread(sdk_base_tar)  # built once per process (~2 s)
        async with await sandboxes.create(limits) as sb:
            await sb.upload_bundle(base, dest="base")
            await sb.upload_files({**wheels, "runner.py": runner})
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
            ok = await step(
                "load_environment() and one rollout", [f"{_VENV}/bin/python", "runner.py", env_id]
            )
    except SandboxError as exc:
        lines.append(f"[sandbox error: {exc}]")
        return result("failed", f"the sandbox failed: {exc}", sandboxes.name)
    report = _last_json(output)
    if ok and report.get("ok"):
        return result("passed", "", sandboxes.name)
    stage, error = report.get("stage", "run"), report.get("error") or "see the log"
    return result("failed", f"{stage}: {error}"[:500], sandboxes.name)


def _last_json(output: str) -> dict[str, object]:
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}
