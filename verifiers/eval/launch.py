"""Running an ``EvalConfig``: its target resolved to a client (starting the embedded local model when the
config names one), a cheap check that the endpoints answer, then ``run_eval``.

``vf-eval`` and ``Environment.evaluate`` both end here, so the same config makes the same run.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from verifiers.clients import Client, Endpoint
from verifiers.clients.client import DEFAULT_READ_TIMEOUT, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT
from verifiers.clients.local_model import LocalModelServer
from verifiers.clients.sampling import merge_sampling_args
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


#: A local llama.cpp model answers one request at a time, so a request may wait behind a whole queue:
#: its bounds are generous rather than looking like a dead server.
LOCAL_TIMEOUT = 3600.0


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
    return Client(
        target.endpoints,
        max_retries=config.max_retries,
        timeout=bounds.get("timeout"),
        read_timeout=bounds.get("read_timeout") or DEFAULT_READ_TIMEOUT,
        total_timeout=bounds.get("total_timeout", DEFAULT_TOTAL_TIMEOUT),
        backend=config.client_backend,
        api=config.api,
    )


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
                    f"{ep.base_url} refused the credentials: check {target.hint()} ({exc})"
                ) from None
            except InfraError as exc:
                raise EndpointCheckError(
                    f"cannot reach {ep.base_url}: {exc}. Check {target.hint()}, and that the server is running"
                ) from None
            except VerifiersError:
                continue  # no usable /models on this server: the run itself will tell
            name = ep.model or target.model
            if served and name not in served:
                shown = ", ".join(served[:5]) + (", …" if len(served) > 5 else "")
                notify(f"{ep.base_url} does not list the model {name!r} (it serves: {shown})")
    finally:
        await probe.aclose()


@asynccontextmanager
async def config_client(config: EvalConfig, notify: Notify = _log_notice) -> AsyncIterator[Client]:
    """The client a config's run uses, checked, with the local model server started (and stopped after)
    when the config names one. Raises ``ConfigError``, ``LocalModelError`` or ``EndpointCheckError``."""
    target = target_of(config)
    async with AsyncExitStack() as stack:
        if target.local:
            server = LocalModelServer(target.model)
            notify(f"starting the local model {target.model} ({server.model_file.name}) …")
            stack.callback(server.stop)  # also after Ctrl-C while it was starting
            # Blocking on purpose: the server is tied to the thread that starts it (PR_SET_PDEATHSIG),
            # and nothing else runs before it answers.
            server.start()
            notify(f"local model server ready at {server.base_url}")
            target.endpoints = [Endpoint(server.base_url)]
        client = client_for(config, target)
        stack.push_async_callback(client.aclose)
        await check_endpoints(client, target, notify)
        yield client


def _client_source(config: EvalConfig, notify: Notify) -> ClientSource:
    def source() -> AbstractAsyncContextManager[Client]:
        # Entered by run_eval once metadata.json is written: a run killed while a local model starts
        # (or during a slow endpoint check) is resumable.
        return config_client(config, notify)

    return source


async def run_config(
    env: EvaluableEnv,
    config: EvalConfig,
    *,
    client: Client | None = None,
    progress: RunProgress | None = None,
    on_group: ProgressCallback | None = None,
    notify: Notify = _log_notice,
) -> EvalRun:
    """Run ``config`` on ``env`` (already loaded with ``config.env_args``). Without ``client``, the
    config's notes go to ``notify`` and its target is resolved and checked first (see
    ``config_client``); a given client is used as is and stays the caller's to close (and the notes the
    caller's to show)."""
    if config.sources.get("env_args", "default") != "default" and config.env_args != env.env_args:
        raise ConfigError(
            f"env_args {config.env_args!r} ({config.sources['env_args']}) differ from the arguments the "
            f"environment was loaded with ({env.env_args!r}); load it with these, or drop env_args"
        )
    for name in ENV_SETTINGS:  # the run settings that live on the environment (Ray actors get them too)
        if (value := getattr(config, name)) is not None:
            setattr(env, name, value)
    source: Client | ClientSource = client if client is not None else _client_source(config, notify)
    base_url: str | list[str] | None = None
    if client is None:
        for note in config.notes:
            notify(note)
        target = target_of(config)
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
    )


__all__ = [
    "EndpointCheckError",
    "Notify",
    "check_endpoints",
    "client_for",
    "config_client",
    "run_config",
    "target_of",
]
