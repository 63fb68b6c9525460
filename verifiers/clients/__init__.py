"""Talking to model servers (OpenAI-compatible HTTP): ``Client`` over the aiohttp or ``openai`` SDK
transport, and ``as_client`` / ``owned_client`` for what callers pass as a client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "ClientLike": "verifiers.clients._as_client",
    "as_client": "verifiers.clients._as_client",
    "owned_client": "verifiers.clients._as_client",
    "Api": "verifiers.clients.client",
    "Backend": "verifiers.clients.client",
    "Client": "verifiers.clients.client",
    "ClientOptions": "verifiers.clients.client",
    "ClientStats": "verifiers.clients.client",
    "Continuation": "verifiers.clients._tokens",
    "Endpoint": "verifiers.clients.client",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.clients._as_client import (
        ClientLike as ClientLike,
        as_client as as_client,
        owned_client as owned_client,
    )
    from verifiers.clients._tokens import Continuation as Continuation
    from verifiers.clients.client import (
        Api as Api,
        Backend as Backend,
        Client as Client,
        ClientOptions as ClientOptions,
        ClientStats as ClientStats,
        Endpoint as Endpoint,
    )
