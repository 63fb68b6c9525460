"""What callers may pass as a model client, made into a ``Client``.

``as_client(obj)`` accepts a ``Client`` (returned as is), a base URL / ``Endpoint`` / list of them, or an
``openai.AsyncOpenAI`` (or ``AsyncAzureOpenAI``) instance. **The caller owns the result exactly when it is
not the object passed in**: then it must ``aclose()`` it — ``owned_client`` does that around a block::

    async with owned_client(client_or_url_or_openai) as client:
        ...

Closing a ``Client`` made from an ``AsyncOpenAI`` never closes that SDK client (it stays the caller's).

An ``AsyncOpenAI`` is taken over — base URL, API key, default headers, organisation / project, timeout and
max_retries — by the fast aiohttp transport unless ``backend="openai"`` is asked for, or the SDK client
uses something only the SDK can do (Azure, an auth provider or callable key, default query parameters, a
custom ``http_client``): then requests go through it (``backend="openai"``) rather than silently dropping
that setting, and ``backend="aiohttp"`` is refused with the reason.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, Unpack

from verifiers.clients.client import Backend, Client, ClientOptions, Endpoint

if TYPE_CHECKING:
    import openai

#: Anything ``as_client`` accepts.
ClientLike: TypeAlias = "Client | str | Endpoint | Sequence[str | Endpoint] | openai.AsyncOpenAI"


def _loaded_openai() -> Any:
    # If openai was never imported, obj cannot be one of its clients: no need to pay for the import.
    return sys.modules.get("openai")


def sdk_only_features(sdk: openai.AsyncOpenAI) -> list[str]:
    """What an ``AsyncOpenAI`` uses that the aiohttp transport cannot reproduce (empty: take it over)."""
    openai_mod = _loaded_openai()
    reasons: list[str] = []
    if openai_mod is not None and isinstance(sdk, openai_mod.AsyncAzureOpenAI):
        reasons.append("Azure endpoint and auth")
    # Private attributes, read defensively: they are how the SDK keeps these settings in 1.x through 3.x.
    if getattr(sdk, "_custom_query", None):
        reasons.append("default query parameters")
    if any(
        getattr(sdk, a, None) is not None for a in ("_api_key_provider", "_provider", "workload_identity")
    ):
        reasons.append("an auth provider")
    base = sys.modules.get("openai._base_client")
    wrapper = getattr(base, "AsyncHttpxClientWrapper", None)
    http = getattr(sdk, "_client", None)
    if isinstance(wrapper, type) and http is not None and not isinstance(http, wrapper):
        reasons.append("a custom http_client")
    return reasons


def _headers_of(sdk: openai.AsyncOpenAI) -> dict[str, str]:
    custom = getattr(sdk, "_custom_headers", None) or {}
    headers = {k: v for k, v in custom.items() if isinstance(v, str)}  # drops the SDK's Omit markers
    if sdk.organization:
        headers.setdefault("OpenAI-Organization", sdk.organization)
    if sdk.project:
        headers.setdefault("OpenAI-Project", sdk.project)
    return headers


def _from_openai(sdk: openai.AsyncOpenAI, backend: Backend | None, options: ClientOptions) -> Client:
    from verifiers.clients._openai_sdk import timeout_seconds

    reasons = sdk_only_features(sdk)
    chosen: Backend = backend or ("openai" if reasons else "aiohttp")
    if chosen == "openai":
        opts: ClientOptions = {"max_retries": sdk.max_retries, **options}
        return Client(openai_client=sdk, backend="openai", **opts)
    if chosen != "aiohttp":
        raise ValueError(f"backend must be 'aiohttp' or 'openai', not {backend!r}")
    if reasons:
        raise ValueError(
            f"this AsyncOpenAI client uses {', '.join(reasons)}, which the aiohttp transport cannot "
            "reproduce: use backend='openai'"
        )
    timeout, connect = timeout_seconds(sdk.timeout)
    taken: ClientOptions = {"timeout": timeout, "max_retries": sdk.max_retries}
    if connect is not None:
        taken["connect_timeout"] = connect
    headers = {**_headers_of(sdk), **(options.get("headers") or {})}
    opts = {**taken, **options, "headers": headers or None}
    # The SDK stores its base URL with a trailing slash; record it as the user wrote it.
    return Client(str(sdk.base_url).rstrip("/"), sdk.api_key or None, backend="aiohttp", **opts)


def as_client(
    obj: ClientLike,
    *,
    backend: Backend | None = None,
    api_key: str | None = None,
    **options: Unpack[ClientOptions],
) -> Client:
    """``obj`` as a ``Client``; the caller owns (must ``aclose``) the result iff it ``is not obj``.

    ``backend`` / ``api_key`` / ``options`` (``timeout=``, ``max_retries=``, ``headers=``, ``api=`` …)
    configure a client made here; they override what an ``AsyncOpenAI`` carries, and are refused for a
    ready ``Client`` (use ``client.with_options(...)``). ``api_key`` is for base URLs only.
    """
    if isinstance(obj, Client):
        if backend is not None or api_key is not None or options:
            raise TypeError("as_client got a ready Client: change its settings with client.with_options(...)")
        return obj
    if isinstance(obj, str | Endpoint) or (
        isinstance(obj, Sequence) and all(isinstance(e, str | Endpoint) for e in obj)
    ):
        return Client(obj, api_key, backend=backend, **options)
    openai_mod = _loaded_openai()
    if openai_mod is not None:
        if isinstance(obj, openai_mod.AsyncOpenAI):
            if api_key is not None:
                raise TypeError("as_client(AsyncOpenAI) uses that client's API key; api_key is for base URLs")
            return _from_openai(obj, backend, options)
        if isinstance(obj, openai_mod.OpenAI):
            raise TypeError("the model client is async: pass an openai.AsyncOpenAI, not an openai.OpenAI")
    raise TypeError(
        f"expected a Client, a base URL, a list of them or an openai.AsyncOpenAI, not {type(obj).__name__}"
    )


@asynccontextmanager
async def owned_client(
    obj: ClientLike,
    *,
    backend: Backend | None = None,
    api_key: str | None = None,
    **options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """``as_client(obj, ...)`` for the length of a block, closed after it iff it was made here."""
    client = as_client(obj, backend=backend, api_key=api_key, **options)
    try:
        yield client
    finally:
        if client is not obj:
            await client.aclose()
