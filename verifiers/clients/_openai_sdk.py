"""The ``openai`` SDK as a transport (``Client(..., backend="openai")``).

For what only the SDK does: Azure endpoints and auth (``AsyncAzureOpenAI``: ``api-key`` header,
``api-version`` query, deployment URLs, Entra ID token providers), SDK-side auth providers, a caller's
own ``httpx.AsyncClient`` (proxies, mTLS, event hooks), and the SDK's request types. It is ~10x slower
than the aiohttp transport on a zero-latency server, which matters only for high-throughput rollouts.

Requests are the SDK's typed calls (``chat.completions.create``, ``completions.create``,
``responses.create``, ``models.list``): body fields the installed SDK knows become keyword arguments, the
rest (vLLM's ``return_token_ids``, ``top_k`` …) go in ``extra_body``, so the wire body equals the aiohttp
transport's. Responses are dumped back to JSON data (``model_dump``, extra fields included) and decoded by
``_decode`` like any other body. The SDK's own retries are switched off (``max_retries=0`` on every SDK
client used here): ``Client``'s retry policy is the only one.

``openai`` is imported when this module's transport is built, never by ``import verifiers``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verifiers._urls import redact_url
from verifiers.clients._transport import (
    ROOT_PATHS,
    Route,
    TransientError,
    error_text,
    route_url,
    status_error,
)
from verifiers.errors import InvalidResponseError

if TYPE_CHECKING:
    import httpx
    import openai

#: Keys of the SDK's ``create`` signatures that are request options, not body fields.
_REQUEST_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout", "stream"})
_KNOWN_PARAMS: dict[Any, frozenset[str]] = {}
#: What the SDK needs as an API key to send a request at all; vLLM's convention for keyless servers.
NO_KEY = "EMPTY"


def import_openai() -> Any:
    try:
        return importlib.import_module("openai")
    except ImportError as exc:  # a core dependency, but keep the message useful in trimmed installs
        raise ImportError("backend='openai' needs the openai package: pip install 'openai>=1.40'") from exc


def _known_params(method: Callable[..., Any]) -> frozenset[str]:
    fn = getattr(method, "__func__", method)
    known = _KNOWN_PARAMS.get(fn)
    if known is None:
        known = frozenset(inspect.signature(method).parameters) - _REQUEST_OPTIONS
        _KNOWN_PARAMS[fn] = known
    return known


def call_arguments(method: Callable[..., Any], payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` split into the keyword arguments ``method`` declares and an ``extra_body``."""
    known = _known_params(method)
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in payload.items():
        (kwargs if key in known else extra)[key] = value
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def to_body(obj: Any) -> Any:
    """An SDK response model as the JSON data it was parsed from (extra fields kept, wire names)."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, warnings=False)
    return obj


def timeout_seconds(timeout: Any, default: float = 600.0) -> tuple[float, float | None]:
    """An SDK timeout (seconds, ``httpx.Timeout`` or ``None``) as (per-request seconds, connect seconds)."""
    if isinstance(timeout, int | float):
        return float(timeout), None
    read = getattr(timeout, "read", None)
    connect = getattr(timeout, "connect", None)
    return (float(read) if read is not None else default), (float(connect) if connect is not None else None)


def _sdk_error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    return error_text(body) if body is not None else str(getattr(exc, "message", exc))


def _connection_reason(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        return f"connection error: {type(cause).__name__}: {cause}"
    return f"connection error: {type(exc).__name__}: {exc}"


class OpenAISDKTransport:
    """Sends each attempt through an ``openai.AsyncOpenAI`` (or ``AsyncAzureOpenAI``) client.

    Either one client per endpoint is built here (``roots`` / ``api_keys``, optionally over the caller's
    ``http_client``), or the caller's ready ``sdk_client`` is used for the single endpoint. Clients built
    here are rebuilt when the event loop changes (an httpx pool is bound to its loop) and closed by
    ``aclose``; the caller's client and ``http_client`` are never closed.
    """

    def __init__(
        self,
        roots: Sequence[str],
        api_keys: Sequence[str | None],
        *,
        timeout: float | None,
        connect_timeout: float,
        headers: Mapping[str, str],
        read_timeout: float | None = None,
        http_client: httpx.AsyncClient | None = None,
        sdk_client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self._openai = import_openai()
        self._roots = list(roots)
        self._api_keys = list(api_keys)
        self._headers = dict(headers)
        self._http_client = http_client
        seconds = 600.0 if timeout is None else timeout
        # httpx has no per-attempt total: ``Client`` bounds attempts with asyncio; here connect and read.
        read = seconds if read_timeout is None else min(seconds, read_timeout)
        self._sdk_timeout = self._openai.Timeout(seconds, connect=connect_timeout, read=read)
        self._given: openai.AsyncOpenAI | None = None
        if sdk_client is not None:
            # A copy sharing the caller's connection pool, with the SDK's retries off (ours apply), its
            # own timeout unless one was given here, and our headers added to its default headers.
            overrides: dict[str, Any] = {"max_retries": 0}
            if timeout is None:
                seconds = timeout_seconds(sdk_client.timeout)[0]
            else:
                overrides["timeout"] = self._sdk_timeout
            if headers:
                overrides["default_headers"] = dict(headers)
            self._given = sdk_client.with_options(**overrides)
        self._timeout_text = f"{seconds:g}s"
        self._clients: list[openai.AsyncOpenAI] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def url(self, idx: int, route: Route) -> str:
        return route_url(self._roots[idx], route)

    def _make(self, idx: int) -> openai.AsyncOpenAI:
        client: openai.AsyncOpenAI = self._openai.AsyncOpenAI(
            base_url=self._roots[idx],
            # Never None: the SDK would fall back to OPENAI_API_KEY and send it to this server.
            api_key=self._api_keys[idx] or NO_KEY,
            timeout=self._sdk_timeout,
            max_retries=0,
            default_headers=self._headers or None,
            http_client=self._http_client,
        )
        return client

    def _sdk(self, idx: int) -> openai.AsyncOpenAI:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._clients is None or self._loop is not loop:
            self._clients = [self._make(i) for i in range(len(self._roots))]
            self._loop = loop
        return self._clients[idx]

    async def send(
        self, idx: int, route: Route, payload: dict[str, Any] | None, headers: Mapping[str, str] | None = None
    ) -> Any:
        openai = self._openai
        sdk = self._sdk(idx)
        url = self.url(idx, route)
        try:
            if route == "models":
                return to_body(await sdk.models.list(extra_headers=dict(headers) if headers else None))
            if route in ("chat_tokens", "tokenize"):
                # Not typed by the SDK: a plain POST, its JSON answer as is (``cast_to=object``).
                client = sdk if route not in ROOT_PATHS else sdk.with_options(base_url=url.rsplit("/", 1)[0])
                path = "/chat/completions/tokens" if route == "chat_tokens" else ROOT_PATHS[route]
                options: Any = {"headers": dict(headers)} if headers else {}
                return await client.post(path, body=payload or {}, cast_to=object, options=options)
            method: Callable[..., Awaitable[Any]]
            if route == "chat":
                method = sdk.chat.completions.create
            elif route == "completions":
                method = sdk.completions.create
            else:
                method = sdk.responses.create
            kwargs = call_arguments(method, payload or {})
            if headers:
                kwargs["extra_headers"] = dict(headers)
            resp = await method(**kwargs)
        except openai.APITimeoutError:
            raise TransientError(
                url, f"request timed out after {self._timeout_text}", timed_out=True
            ) from None
        except openai.APIConnectionError as exc:
            raise TransientError(url, _connection_reason(exc)) from None
        except openai.APIStatusError as exc:
            retry_after = exc.response.headers.get("retry-after")
            raise status_error(url, exc.status_code, _sdk_error_text(exc), retry_after) from None
        except openai.APIResponseValidationError as exc:  # only with strict validation switched on
            raise InvalidResponseError(f"{redact_url(url)} returned a body the SDK rejects: {exc}") from None
        except json.JSONDecodeError as exc:
            # A garbled 200 (proxy page, truncated body) is retried like a 5xx, as on the aiohttp path.
            doc = exc.doc[:200].encode("utf-8", "replace")
            raise TransientError(url, f"undecodable response body: {doc[:120]!r}", garbled=doc) from None
        if isinstance(resp, str):  # the SDK hands back non-JSON bodies as text
            doc = resp[:200].encode("utf-8", "replace")
            raise TransientError(url, f"undecodable response body: {doc[:120]!r}", garbled=doc)
        return to_body(resp)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, None
        if clients and self._http_client is None and self._loop is asyncio.get_running_loop():
            await asyncio.gather(*(c.close() for c in clients))
