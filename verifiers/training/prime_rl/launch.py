"""``vf-train launch DIR``: env servers up, then prime-rl's commands (printed with ``--dry-run``).

The env servers are ``vf-serve`` subprocesses, one per environment, on the ports ``vf-train.toml`` names
(training and serving are sibling layers: this module never imports ``verifiers.serve``). The bridge and
loss packages are written to ``DIR/packages`` and installed into prime-rl's venv before its launcher runs.
On a machine without a GPU the launch stops once the env servers are healthy, and says so.

``orchestrator_only``: the inference servers and the trainer run elsewhere (or are started by hand), so
only the env servers and prime-rl's orchestrator run here, no GPU needed: ``rl @ rl.toml --dry-run``
resolves the run exactly as the launcher would (it writes ``OUTPUT_DIR/configs/orchestrator.toml``), then
``orchestrator @ that file`` runs until its last step. prime-rl comes from a checkout (``prime_rl_dir``:
``uv run --project``) or from an environment it is installed in (``prime_rl_python``). prime-rl's commands
run in the run directory, so relative paths in ``rl.toml`` (``output_dir``) are relative to it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.training.prime_rl.bridge import write_packages
from verifiers.training.prime_rl.render import RL_FILE, SBATCH_FILE, env_server_commands
from verifiers.training.prime_rl.spec import RunSpec

#: A shell variable reference (``$PRIME_RL_DIR``, ``${HOME}``) and a plain path after it: what may stay
#: expandable in a printed command; anything else (``$(cmd)``, backquotes, ``;``) is quoted literally.
_VARIABLE_PATH = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})(?:/[A-Za-z0-9._/+-]*)?")


def shell_join(cmd: list[str]) -> str:
    """``shlex.join``, except that an argument that is a ``$VARIABLE`` (plus a plain path) stays expandable
    (double quotes) when the line is pasted; every other argument is quoted literally."""
    return " ".join(f'"{a}"' if _VARIABLE_PATH.fullmatch(a) else shlex.quote(a) for a in cmd)


class LaunchError(RuntimeError):
    """An env server did not come up, or prime-rl's launcher failed."""


@dataclass
class LaunchPlan:
    run_dir: Path
    spec: RunSpec
    env_servers: list[list[str]]
    packages: list[Path]
    prime_rl_commands: list[list[str]] = field(default_factory=list)
    #: The resolved orchestrator config the last command runs (``orchestrator_only``), else ``None``.
    orchestrator_config: Path | None = None

    def lines(self) -> list[str]:
        out = ["# env servers (one vf-serve per environment)"]
        out += [shell_join(c) + " &" for c in self.env_servers]
        out += ["# prime-rl, from the run directory", shell_join(["cd", str(self.run_dir.resolve())])]
        out += [shell_join(c) for c in self.prime_rl_commands]
        return out


def _prime_rl(prime_rl_dir: str, prime_rl_python: str | None, entry: str, module: str) -> list[str]:
    """How to run one of prime-rl's entry points (``rl``, ``orchestrator``)."""
    if prime_rl_python is not None:
        return [prime_rl_python, "-m", module]
    return ["uv", "run", "--project", prime_rl_dir, entry]


def plan(
    run_dir: Path,
    prime_rl_dir: str = "$PRIME_RL_DIR",
    *,
    prime_rl_python: str | None = None,
    orchestrator_only: bool = False,
) -> LaunchPlan:
    spec = RunSpec.read(run_dir)
    doc = tomllib.loads((run_dir / RL_FILE).read_text())
    packages = write_packages(run_dir, spec)
    run = run_dir.resolve()
    py = prime_rl_python or f"{prime_rl_dir}/.venv/bin/python"
    install = ["uv", "pip", "install", "--python", py, *(str(p.resolve()) for p in packages)]
    rl = _prime_rl(prime_rl_dir, prime_rl_python, "rl", "prime_rl.entrypoints.rl")
    orchestrator = _prime_rl(
        prime_rl_dir, prime_rl_python, "orchestrator", "prime_rl.orchestrator.orchestrator"
    )
    config: Path | None = None
    if orchestrator_only:
        if spec.preset == "intellect3":
            config = run / "orchestrator.toml"
            cmds = [install, [*orchestrator, "@", str(config)]]
        else:
            output = Path(str(doc.get("output_dir", "outputs")))
            config = (output if output.is_absolute() else run / output) / "configs" / "orchestrator.toml"
            cmds = [install, [*rl, "@", str(run / RL_FILE), "--dry-run"], [*orchestrator, "@", str(config)]]
    elif spec.preset == "intellect3":
        cmds = [["sbatch", "--chdir", str(run), str(run / SBATCH_FILE)]]
    else:
        cmds = [install, [*rl, "@", str(run / RL_FILE)]]
    return LaunchPlan(run_dir, spec, env_server_commands(spec, doc), packages, cmds, config)


def gpu_count() -> int:
    """GPUs visible here (``nvidia-smi -L``); 0 without the driver."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def env_servers(
    plan: LaunchPlan, *, timeout: float = 120.0, log_dir: Path | None = None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Start every ``vf-serve`` of the plan, wait for ``/health``; stop them (TERM, then KILL) on exit."""
    log_dir = log_dir or plan.run_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    bindir = Path(sys.executable).parent
    try:
        for i, cmd in enumerate(plan.env_servers):
            exe = shutil.which(cmd[0], path=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}") or cmd[0]
            log = (log_dir / f"vf-serve-{i}.log").open("wb")
            procs.append(subprocess.Popen([exe, *cmd[1:]], stdout=log, stderr=subprocess.STDOUT))
            log.close()
        deadline = time.monotonic() + timeout
        for proc, entry, i in zip(procs, plan.spec.env, range(len(procs)), strict=True):
            while not _healthy(entry.http_url):
                if proc.poll() is not None:
                    tail = (log_dir / f"vf-serve-{i}.log").read_text(errors="replace")[-800:]
                    raise LaunchError(
                        f"vf-serve for {entry.id} exited with {proc.returncode}: {tail.strip()}"
                    )
                if time.monotonic() > deadline:
                    raise LaunchError(
                        f"vf-serve for {entry.id} not healthy at {entry.http_url} after {timeout:.0f}s"
                    )
                time.sleep(0.3)
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _run(cmd: list[str], cwd: Path) -> int:
    """Run one of prime-rl's commands (``uv`` found beside this Python when not on ``PATH``)."""
    bindir = Path(sys.executable).parent
    exe = shutil.which(cmd[0], path=f"{os.environ.get('PATH', '')}{os.pathsep}{bindir}") or cmd[0]
    return subprocess.run([exe, *cmd[1:]], cwd=cwd, check=False).returncode


def launch(
    run_dir: Path,
    *,
    dry_run: bool = False,
    prime_rl_dir: str | None = None,
    prime_rl_python: str | None = None,
    orchestrator_only: bool = False,
    say: Callable[[str], None] = print,
    timeout: float = 120.0,
) -> int:
    """Returns an exit status: 0 when the plan was printed, the env servers came up (no GPU) or prime-rl's
    launcher (or, ``orchestrator_only``, its orchestrator) succeeded."""
    p = plan(
        run_dir,
        prime_rl_dir or "$PRIME_RL_DIR",
        prime_rl_python=prime_rl_python,
        orchestrator_only=orchestrator_only,
    )
    if dry_run:
        for line in p.lines():
            say(line)
        return 0
    if orchestrator_only:
        if prime_rl_dir is None and prime_rl_python is None:
            raise LaunchError("give --prime-rl-dir or --prime-rl-python: the orchestrator runs here")
        with env_servers(p, timeout=timeout):
            for e, cmd in zip(p.spec.env, p.env_servers, strict=True):
                say("$ " + shell_join(cmd))
                say(f"env server {e.id}: healthy at {e.http_url} (ZMQ {e.zmq_address})")
            for cmd in p.prime_rl_commands:
                say("$ " + shell_join(cmd))
                status = _run(cmd, p.run_dir.resolve())
                if status != 0:
                    raise LaunchError(f"{shell_join(cmd)} exited with {status}")
        say(f"orchestrator finished ({p.orchestrator_config})")
        return 0
    if p.spec.preset == "intellect3":
        # Multi-node: the env servers start on the first trainer node (launch_node.sh), not here.
        if shutil.which("sbatch") is None:
            say("no sbatch on this machine: submit from the cluster's login node with:")
            say("  " + shlex.join(p.prime_rl_commands[0]))
            return 0
        return subprocess.run(p.prime_rl_commands[0], check=False).returncode
    with env_servers(p, timeout=timeout):
        for e in p.spec.env:
            say(f"env server {e.id}: healthy at {e.http_url} (ZMQ {e.zmq_address})")
        gpus = gpu_count()
        if gpus == 0:
            say(
                "no GPU on this machine: prime-rl needs CUDA, so the launch stops here (env servers were healthy)."
            )
            say("on the GPU machine run:")
            for line in p.lines():
                say(f"  {line}")
            return 0
        if prime_rl_dir is None:
            raise LaunchError(
                "give --prime-rl-dir (a prime-rl v0.5.0 checkout with its venv) to run prime-rl"
            )
        say(f"{gpus} GPU(s) found; running prime-rl")
        for cmd in p.prime_rl_commands:
            say("$ " + shell_join(cmd))
            status = _run(cmd, p.run_dir.resolve())
            if status != 0:
                raise LaunchError(f"{shell_join(cmd)} exited with {status}")
    return 0
