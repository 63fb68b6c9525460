"""Running an ``EvalConfig``: its target resolved to a client (starting the embedded local model or the
scripted model when the config names one), a cheap check that the endpoints answer, then ``run_eval``.

``vf-eval`` and ``Environment.evaluate`` both end here, so the same config makes the same run.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from verifiers._extras import require_extra
from verifiers._urls import redact_url
from verifiers.clients import Client, Endpoint
from verifiers.clients._server_process import ModelServer
from verifiers.clients.client import DEFAULT_READ_TIMEOUT, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT
from verifiers.clients.local_model import LocalModelServer, cpu_cores
from verifiers.clients.sampling import merge_sampling_args
from verifiers.clients.scripted.server import ScriptedModelServer
from verifiers.clients.target import Target, TargetError, resolve_target
from verifiers.errors import AuthenticationError, InfraError, VerifiersError
from verifiers.eval.config import ENV_SETTINGS, ConfigError, EvalConfig
from verifiers.eval.engine import ProgressCallback, RunProgress
from verifiers.eval.run import ClientSource, EvalRun, EvaluableEnv, run_eval

log = logging.getLogger(__name__)
#: Receives one-line notices meant for the user (local model starting, a model the server does not list).
Notify = Callable[[str], None]


class EndpointCheckError(InfraError):
    """An endpoint refused the credentials or could not be reached before the run started."""


def _log_notice(message: str) -> None:
    log.warning("%s", message)


def target_of(config: EvalConfig) -> Target:
    """The config's model target; raises ``ConfigError`` saying what to fix."""
    try:
        return resolve_target(
            config.model,
            base_url=config.base_url,
            api_key_var=config.api_key_var,
            registry_path=config.endpoints_file,
        )
    except TargetError as exc:
        raise ConfigError(str(exc)) from None


#: A local llama.cpp slot answers one request at a time, so a request may wait behind a queue: its
#: bounds are generous rather than looking like a dead server.
LOCAL_TIMEOUT = 3600.0


def local_slots(config: EvalConfig, cores: int | None = None) -> int:
    """How many llama.cpp server processes a local-model run starts: one per request the run can have in
    flight (its concurrency, and no more than the rollouts it plans), at most one per core — more would
    only time-share the cores."""
    cores = cores or cpu_cores()
    limit = config.max_concurrent
    in_flight = limit if isinstance(limit, int) else limit[1] if isinstance(limit, tuple) else cores
    if config.num_examples > 0:
        in_flight = min(in_flight, config.num_examples * config.rollouts_per_example)
    return max(1, min(cores, in_flight))


def client_for(config: EvalConfig, target: Target) -> Client:
    """A client for ``target`` with the config's retry policy and request bounds: ``request_timeout``
    bounds each request (retries included, and each phase within it), else the client's defaults
    (``verifiers.clients.client.DEFAULT_*_TIMEOUT``), or ``LOCAL_TIMEOUT`` for the local model."""
    bounds: dict[str, float | None] = {}
    if config.request_timeout is not None:
        t = config.request_timeout
        bounds = {
            "timeout": min(t, DEFAULT_TIMEOUT),
            "read_timeout": min(t, DEFAULT_READ_TIMEOUT),
            "total_timeout": t,
        }
    elif target.local:
        bounds = {"timeout": LOCAL_TIMEOUT, "read_timeout": LOCAL_TIMEOUT, "total_timeout": 2 * LOCAL_TIMEOUT}
    client = Client(
        target.endpoints,
        max_retries=config.max_retries,
        timeout=bounds.get("timeout"),
        read_timeout=bounds.get("read_timeout") or DEFAULT_READ_TIMEOUT,
        total_timeout=bounds.get("total_timeout", DEFAULT_TOTAL_TIMEOUT),
        backend=config.client_backend,
        api=config.api,
        # Each local slot answers one request at a time: a group pinned to one would queue there.
        balance="least_busy" if target.local else "group",
    )
    if target.local:  # each endpoint is one llama.cpp process, answering one request at a time
        client.stats.capacity = len(target.endpoints)
    return client


async def check_endpoints(client: Client, target: Target, notify: Notify = _log_notice) -> None:
    """A ``GET /models`` per endpoint, so a wrong URL or key fails in seconds with a clear message
    (``EndpointCheckError``); a server that does not list the model gets a notice, not an error."""
    probe = client.with_options(timeout=20.0, connect_timeout=10.0, max_retries=1, backoff_base=0.2)
    try:
        for i, ep in enumerate(probe.endpoints):
            try:
                served = await probe.list_models(i)
            except AuthenticationError as exc:
                raise EndpointCheckError(
                    f"{redact_url(ep.base_url)} refused the credentials: check {target.hint()} ({exc})"
                ) from None
            except InfraError as exc:
                raise EndpointCheckError(
                    f"cannot reach {redact_url(ep.base_url)}: {redact_url(exc)}. Check {target.hint()}, and that the server is running"
                ) from None
            except VerifiersError:
                continue  # no usable /models on this server: the run itself will tell
            name = ep.model or target.model
            if served and name not in served:
                shown = ", ".join(served[:5]) + (", …" if len(served) > 5 else "")
                notify(f"{redact_url(ep.base_url)} does not list the model {name!r} (it serves: {shown})")
    finally:
        await probe.aclose()


def _start_server(target: Target, slots: int, notify: Notify) -> ModelServer:
    """The target's model server, started: the scripted model, or the local one with ``slots``."""
    server: ModelServer
    if target.rules_file is not None:
        server = ScriptedModelServer(target.rules_file, model_name=target.model)
        notify(f"starting the scripted model ({target.rules_file}) …")
    else:
        local = server = LocalModelServer(target.model, slots=slots)
        answers = f"{slots} requests at a time" if slots > 1 else "one request at a time"
        notify(f"starting the local model {target.model} ({local.model_file.name}, {answers}) …")
    try:
        # Blocking on purpose: the server is tied to the thread that starts it (PR_SET_PDEATHSIG), and
        # nothing else runs before it answers.
        server.start()
    except BaseException:  # also Ctrl-C while it was starting (a failed start has kept its log already)
        server.stop()
        raise
    what = "scripted model" if target.rules_file is not None else "local model server"
    notify(f"{what} ready at {', '.join(server.base_urls)}")
    return server


class LocalModels:
    """Model servers shared by several runs (a suite; the local and the scripted model): each model starts
    at the first run that needs it and serves every later one, until ``close()`` (or the end of the
    ``with`` block). Use it from one thread: the servers are tied to the thread that starts them.

    ``for_configs(configs)`` sizes each model's slots for the busiest of the runs that will use it."""

    def __init__(self, slots: dict[str, int] | None = None) -> None:
        self._servers: dict[str, ModelServer] = {}
        self._slots = dict(slots or {})

    @classmethod
    def for_configs(cls, configs: list[EvalConfig]) -> LocalModels:
        slots: dict[str, int] = {}
        for config in configs:
            try:
                target = target_of(config)
            except ConfigError:
                continue
            if target.local and not target.endpoints:
                slots[target.model] = max(slots.get(target.model, 1), local_slots(config))
        return cls(slots)

    def server(self, target: Target, slots: int = 1, notify: Notify = _log_notice) -> ModelServer:
        server = self._servers.get(target.model)
        if server is None or not server.running:
            wanted = max(slots, self._slots.get(target.model, 1))
            server = self._servers[target.model] = _start_server(target, wanted, notify)
        return server

    def close(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()

    def __enter__(self) -> LocalModels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@asynccontextmanager
async def config_client(
    config: EvalConfig, notify: Notify = _log_notice, *, local_models: LocalModels | None = None
) -> AsyncIterator[Client]:
    """The client a config's run uses, checked, with the local or scripted model server started (and
    stopped after) when the config names one — or taken from ``local_models``, which keeps it for later
    runs. Raises ``ConfigError``, ``ModelServerError`` or ``EndpointCheckError``."""
    target = target_of(config)
    async with AsyncExitStack() as stack:
        if target.starts_server:  # else it is served already, at the given base URL
            server: ModelServer
            if local_models is not None:
                server = local_models.server(target, local_slots(config), notify)
            else:
                server = _start_server(target, local_slots(config), notify)
                stack.callback(server.stop)
            target.endpoints = [Endpoint(url) for url in server.base_urls]
        client = client_for(config, target)
        stack.push_async_callback(client.aclose)
        await check_endpoints(client, target, notify)
        yield client


def _client_source(config: EvalConfig, notify: Notify, local_models: LocalModels | None) -> ClientSource:
    def source() -> AbstractAsyncContextManager[Client]:
        # Entered by run_eval as the run's start-up: a local model that cannot start, or an endpoint
        # that does not answer, fails the run before it makes a run directory.
        return config_client(config, notify, local_models=local_models)

    return source


async def run_config(
    env: EvaluableEnv,
    config: EvalConfig,
    *,
    client: Client | None = None,
    progress: RunProgress | None = None,
    on_group: ProgressCallback | None = None,
    notify: Notify = _log_notice,
    local_models: LocalModels | None = None,
) -> EvalRun:
    """Run ``config`` on ``env`` (already loaded with ``config.env_args``). Without ``client``, the
    config's notes go to ``notify`` and its target is resolved and checked first (see
    ``config_client``; a local model comes from ``local_models`` when given, so that several runs share
    it); a given client is used as is and stays the caller's to close (and the notes the caller's to
    show)."""
    if config.sources.get("env_args", "default") != "default" and config.env_args != env.env_args:
        raise ConfigError(
            f"env_args {config.env_args!r} ({config.sources['env_args']}) differ from the arguments the "
            f"environment was loaded with ({env.env_args!r}); load it with these, or drop env_args"
        )
    if config.ray is not None:  # before anything starts: one line naming the extra, not a failed run
        require_extra("ray", "distributed evaluation (ray=…, vf-eval --ray)")
    for name in ENV_SETTINGS:  # the run settings that live on the environment (Ray actors get them too)
        if (value := getattr(config, name)) is not None:
            setattr(env, name, value)
    source: Client | ClientSource = (
        client if client is not None else _client_source(config, notify, local_models)
    )
    base_url: str | list[str] | None = None
    if client is None:
        for note in config.notes:
            notify(note)
        target = target_of(config)
        if target.calls_tools is False and (tools := env.tool_names()):
            notify(
                f"{config.model} does not call tools, and {env.env_id} offers {len(tools)} "
                f"({', '.join(tools[:5])}{', …' if len(tools) > 5 else ''}): each rollout ends at the model's "
                "first reply, so the score says little about the environment; use a model that calls tools"
            )
        urls = [e.base_url for e in target.endpoints]
        base_url = (urls if len(urls) > 1 else urls[0]) if urls else target.model
    return await run_eval(
        env,
        source,
        config.model,
        num_examples=config.num_examples,
        rollouts_per_example=config.rollouts_per_example,
        max_concurrent=config.max_concurrent,
        sampling_args=merge_sampling_args(config.sampling_args),
        seed=config.seed,
        shuffle=config.shuffle,
        score=config.score,
        output_dir=config.output_dir if config.save_results else None,
        resume=bool(config.resume),
        progress=progress,
        on_group=on_group,
        pass_threshold=config.pass_threshold,
        max_tokens_limit=config.max_tokens_limit,
        base_url=base_url,
        ray=config.ray,
        max_rollouts=config.max_rollouts,
    )


__all__ = [
    "EndpointCheckError",
    "LocalModels",
    "Notify",
    "check_endpoints",
    "client_for",
    "config_client",
    "run_config",
    "target_of",
]
