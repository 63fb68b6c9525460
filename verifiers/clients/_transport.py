"""What a ``Client`` needs from the code that moves bytes: one *attempt* at one request.

``Client`` owns everything a caller can observe — endpoint choice, payload shape, the one retry policy
(backoff, ``Retry-After``, stats, ``on_retry``), decoding and usage — and hands each attempt to a
``Transport``: the fast aiohttp path (``_aiohttp``) or the ``openai`` SDK (``_openai_sdk``). An attempt
either returns the decoded JSON body, raises ``TransientError`` (the retry loop may try again), or raises
a final ``verifiers.errors`` error. Both transports classify failures with the helpers below, so the same
server behaviour is the same error whichever transport met it.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeAlias

from verifiers._urls import redact_url
from verifiers.errors import (
    AuthenticationError,
    BadRequestError,
    EndpointUnavailableError,
    InvalidResponseError,
    OverlongPromptError,
    RequestTimeoutError,
    VerifiersError,
)

#: The calls a client makes: chat completions, plain completions, the Responses API, model listing, and
#: vLLM's two token routes: chat completions from prompt token ids (``/chat/completions/tokens``, what the
#: reference SDK's token client and prime-rl's orchestrator use) and ``/tokenize``.
Route: TypeAlias = Literal["chat", "chat_tokens", "tokenize", "completions", "responses", "models"]
#: The URL path of each route, relative to the endpoint root (``…/v1``).
ROUTE_PATHS: dict[Route, str] = {
    "chat": "/chat/completions",
    "chat_tokens": "/chat/completions/tokens",
    "completions": "/completions",
    "responses": "/responses",
    "models": "/models",
}
#: Routes served at the server's root, beside ``/v1`` rather than under it (vLLM's ``/tokenize``).
ROOT_PATHS: dict[Route, str] = {"tokenize": "/tokenize"}


def route_url(root: str, route: Route) -> str:
    """The URL of ``route`` on the endpoint whose base URL (``…/v1``) is ``root``."""
    if route in ROOT_PATHS:
        return root.removesuffix("/v1") + ROOT_PATHS[route]
    return root + ROUTE_PATHS[route]


RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 524, 529})
#: Statuses that mean "too much load", besides timeouts.
THROTTLE_STATUS = frozenset({429, 503})
_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too long", "exceeds the")


class TransientError(Exception):
    """One attempt failed in a way a retry may fix: 408/429/5xx, a dropped connection, a timeout, or a
    200 whose body is not JSON. ``final(attempts)`` is the error raised once retries are exhausted."""

    def __init__(
        self,
        url: str,
        reason: str,
        *,
        retry_after: float | None = None,
        timed_out: bool = False,
        garbled: bytes | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.url = url
        self.reason = reason
        self.retry_after = retry_after
        self.timed_out = timed_out
        #: The start of an undecodable 200 body (then the final error is a model error, not infra).
        self.garbled = garbled
        #: The HTTP status of the answer, when there was one.
        self.status = status

    @property
    def throttled(self) -> bool:
        """The endpoint pushing back (429, 503, a timeout): what adaptive concurrency backs off on."""
        return self.timed_out or self.status in THROTTLE_STATUS

    def final(self, attempts: int) -> VerifiersError:
        if self.garbled is not None:
            return InvalidResponseError(
                f"{redact_url(self.url)} returned a non-JSON body after {attempts} attempts: {self.garbled[:200]!r}"
            )
        if self.timed_out:
            return RequestTimeoutError(f"{redact_url(self.url)}: {self.reason} ({attempts} attempts)")
        return EndpointUnavailableError(
            f"{redact_url(self.url)} failed after {attempts} attempts; last error: {redact_url(self.reason)}"
        )


class Transport(Protocol):
    """Sends one attempt of one request to endpoint ``idx`` (an index into the client's endpoints)."""

    async def send(
        self, idx: int, route: Route, payload: dict[str, Any] | None, headers: Mapping[str, str] | None = None
    ) -> Any:
        """The response body as JSON-like data (dicts and lists), or raise ``TransientError`` / a
        ``verifiers.errors`` error. ``payload`` is the wire-format request body (``None`` for GET);
        ``headers`` are added to this request only."""
        ...

    def url(self, idx: int, route: Route) -> str:
        """The URL a route of endpoint ``idx`` is sent to (for error messages)."""
        ...

    async def aclose(self) -> None:
        """Release what this transport opened (never what the caller handed in)."""
        ...


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_text(body: Any) -> str:
    """The human part of an error body: ``{"error": {"message": ...}}``, ``{"message": ...}`` or text."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:500]
        return str(err)[:500]
    return str(body)[:300]


def status_error(url: str, status: int, message: str, retry_after: str | None = None) -> Exception:
    """The error for a non-200 answer: a ``TransientError`` for retryable statuses, else a final one."""
    if status in RETRY_STATUS:
        return TransientError(
            url, f"HTTP {status}: {message}", retry_after=retry_after_seconds(retry_after), status=status
        )
    if status in (401, 403):
        return AuthenticationError(
            f"{redact_url(url)} refused the credentials (HTTP {status}): check the API key variable. {message}"
        )
    if status == 400 and any(h in message.lower() for h in _CONTEXT_HINTS):
        return OverlongPromptError(f"prompt too long for the model (HTTP 400): {message}")
    if status == 404:
        return BadRequestError(
            f"{redact_url(url)} answered 404: check the base URL and model name. {message}"
        )
    return BadRequestError(f"{redact_url(url)} rejected the request (HTTP {status}): {message}")
