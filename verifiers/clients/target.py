"""Where a run's requests go: a model name resolved to endpoints (a registry alias, a base URL, the
embedded local model or the scripted model), checked before anything expensive starts.

Resolution order: ``local/NAME`` or ``local:PATH`` is the embedded llama.cpp model (started for the run,
or, with a base URL, the one already served there: a ``LocalModelServer`` of the caller's);
``scripted:RULES_FILE`` is the scripted model (its rules file read and checked now; started for the run, or
already served at the base URL: ``vf-model-stub RULES_FILE``); else an alias of the
endpoint registry (``registry_path``, or ``./configs/endpoints.toml`` when it exists) unless a base URL is
given; else ``base_url`` (default: OpenAI's) with the key from ``api_key_var`` (default
``OPENAI_API_KEY``, which may be unset for servers without auth).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from verifiers._urls import redact_url
from verifiers.clients.client import Endpoint
from verifiers.clients.local_model import (
    BUILTIN_MODELS,
    CALLS_TOOLS,
    LOCAL_PREFIX,
    LocalModelError,
    check_server_installed,
    is_local_model,
    resolve_model_file,
)
from verifiers.clients.registry import DEFAULT_REGISTRY_PATH, EndpointRegistry, RegistryError
from verifiers.clients.scripted.rules import RulesError, load_script
from verifiers.clients.scripted.server import ScriptedModelError, is_scripted_model, rules_path

DEFAULT_MODEL = "gpt-4.1-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VAR = "OPENAI_API_KEY"
#: Context length assumed for ``local:PATH`` models (the server is started with it).
LOCAL_DEFAULT_CONTEXT = 2048


class TargetError(ValueError):
    """The model target cannot be used as given; the message says what to change."""


@dataclass
class Target:
    """The client endpoints of a run and the model name recorded in its results."""

    model: str
    endpoints: list[Endpoint] = field(default_factory=list)
    #: The embedded local model. Without endpoints its server is started for the run (and they are filled
    #: in then); with them, it is already served there.
    local: bool = False
    key_var: str | None = None
    key_set: bool = False
    #: Context length of the local model (``max_tokens`` is capped to fit it), else ``None``.
    context_tokens: int | None = None
    #: Whether the model returns tool calls: ``False`` for the local model, ``None`` when not known.
    calls_tools: bool | None = None
    #: The scripted model's rules file (``scripted:RULES_FILE``): without endpoints its server is started
    #: for the run.
    rules_file: Path | None = None

    @property
    def starts_server(self) -> bool:
        """Whether the run starts this target's model server itself (the local or the scripted model)."""
        return (self.local or self.rules_file is not None) and not self.endpoints

    def hint(self) -> str:
        """What to check when requests fail (named in error messages)."""
        if self.local:
            return f"the local model server ({self.model})"
        if self.rules_file is not None:
            return f"the scripted model's rules ({self.rules_file})"
        key = (
            f"the API key variable {self.key_var} ({'set' if self.key_set else 'not set'})"
            if self.key_var
            else "the API key"
        )
        urls = ", ".join(redact_url(e.base_url) for e in self.endpoints)
        return f"the URL ({urls}), {key} and the model name ({self.model})"


def resolve_context_tokens(model: str) -> int | None:
    """The context length of a local model (built-in or ``local:PATH``); ``None`` for remote models."""
    if not is_local_model(model):
        return None
    builtin = BUILTIN_MODELS.get(model[len(LOCAL_PREFIX) :]) if model.startswith(LOCAL_PREFIX) else None
    return builtin.n_ctx if builtin else LOCAL_DEFAULT_CONTEXT


def _local_target(model: str, base_url: str | None) -> Target:
    context = resolve_context_tokens(model)
    if base_url is not None:  # served already (``with LocalModelServer(...) as server``): nothing to start
        return Target(
            model=model,
            endpoints=[Endpoint(base_url)],
            local=True,
            context_tokens=context,
            calls_tools=CALLS_TOOLS,
        )
    try:  # fail before loading anything when a package or the model file is missing
        resolve_model_file(model)
        check_server_installed()
    except LocalModelError as exc:
        raise TargetError(str(exc)) from None
    return Target(model=model, local=True, context_tokens=context, calls_tools=CALLS_TOOLS)


def _scripted_target(model: str, base_url: str | None) -> Target:
    try:  # a rules file that cannot be used fails here, in one line, before anything loads
        path = rules_path(model)
        script = load_script(path)
    except (RulesError, ScriptedModelError) as exc:
        raise TargetError(str(exc)) from None
    endpoints = [Endpoint(base_url)] if base_url is not None else []
    return Target(model=model, endpoints=endpoints, calls_tools=script.calls_tools, rules_file=path)


def _load_registry(registry_path: Path | None) -> EndpointRegistry | None:
    try:
        if registry_path is not None:
            return EndpointRegistry.load(registry_path)
        if DEFAULT_REGISTRY_PATH.is_file():
            return EndpointRegistry.load(DEFAULT_REGISTRY_PATH)
    except RegistryError as exc:
        raise TargetError(f"endpoint registry: {exc}") from None
    return None


def resolve_target(
    model: str,
    *,
    base_url: str | None = None,
    api_key_var: str | None = None,
    registry_path: Path | None = None,
) -> Target:
    """Resolve ``model`` (see the module docstring); raises ``TargetError`` saying what to fix."""
    if is_local_model(model):
        return _local_target(model, base_url)
    if is_scripted_model(model):
        return _scripted_target(model, base_url)
    registry = _load_registry(registry_path)
    if registry is not None and model in registry and base_url is None:
        try:
            endpoints = registry.endpoints(model, key_var=api_key_var)
        except RegistryError as exc:
            raise TargetError(str(exc)) from None
        entries = registry.get(model) or []
        entry_var = api_key_var or next((e.key_var for e in entries if e.key_var), None)
        return Target(model, endpoints, key_var=entry_var, key_set=all(e.api_key for e in endpoints))
    var = api_key_var or DEFAULT_KEY_VAR
    key = os.environ.get(var)
    if api_key_var is not None and key is None:
        raise TargetError(f"the API key variable {api_key_var} is not set")
    # The default variable may be unset: local servers need no key (the server says so if it does).
    return Target(model, [Endpoint(base_url or DEFAULT_BASE_URL, key)], key_var=var, key_set=key is not None)


__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_KEY_VAR",
    "DEFAULT_MODEL",
    "Target",
    "TargetError",
    "resolve_context_tokens",
    "resolve_target",
]
