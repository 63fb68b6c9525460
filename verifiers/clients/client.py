"""The model client: OpenAI-compatible chat, Responses API and plain completions over one of two transports.

``Client`` keeps what callers see the same whichever transport carries the bytes: endpoints (replicas,
pinned per group), the request body, one retry policy (exponential backoff with full jitter,
``Retry-After``, ``stats``, ``on_retry``), decoding into ``ModelResponse``, usage, and the error categories
of ``verifiers.errors``. Each attempt goes through a transport (``_transport.Transport``):

- ``backend="aiohttp"`` (default): one aiohttp session and orjson. Why not the ``openai`` SDK here: this is
  the hot path of every eval and of RL rollout generation. On a 2-core machine against a zero-latency
  server (``benchmarks/zero_latency_server.py``, 64 concurrent requests) the SDK tops out near ~700
  requests/s (httpx plus pydantic model construction per response), while the aiohttp transport sustains
  ~11,000. We need one request shape and the fields we record, so we speak the protocol directly.
- ``backend="openai"``: the ``openai`` SDK (``AsyncOpenAI``, or a caller's ``AsyncAzureOpenAI`` /
  configured client via ``openai_client=``; a custom ``httpx.AsyncClient`` via ``http_client=``), for Azure
  endpoints and auth, SDK auth providers, proxies and other httpx settings. Imported only when used.

``api="chat"`` sends chat calls to ``/chat/completions``; ``api="responses"`` sends them to the Responses API
(``/responses``), mapping messages and tools there and the output back to the same assistant message
(``_responses``, ``_decode.decode_responses``). ``complete()`` always uses ``/completions``.

``as_client`` / ``owned_client`` (``_as_client``) turn what callers pass as a client — a ``Client``, a base
URL, an ``openai.AsyncOpenAI`` — into a ``Client``.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict, Unpack, get_args

from verifiers._urls import redact_url
from verifiers.clients._decode import decode_chat, decode_completion, decode_responses
from verifiers.clients._responses import responses_payload
from verifiers.clients._tokens import Continuation, continuation_prompt_ids
from verifiers.clients._transport import Route, TransientError, Transport
from verifiers.clients.sampling import request_fields
from verifiers.errors import VerifiersError
from verifiers.types import Messages, ModelResponse, SamplingArgs, Usage

if TYPE_CHECKING:
    import httpx
    import openai

#: Which code sends the requests: the fast aiohttp transport, or the ``openai`` SDK.
Backend: TypeAlias = Literal["aiohttp", "openai"]
#: Which API chat calls use: Chat Completions, or the Responses API.
Api: TypeAlias = Literal["chat", "responses"]
#: The body field a chat request's token cap goes in: ``max_tokens`` (what every OpenAI-compatible server
#: reads, llama.cpp's included) or ``max_completion_tokens`` (OpenAI's current name, which the reference
#: SDK sends and vLLM reads too; llama-cpp-python's server ignores it).
MaxTokensField: TypeAlias = Literal["max_tokens", "max_completion_tokens"]
#: How requests spread over replicas: each group pinned to one endpoint (round-robin per group: a group
#: shares prefix caches), or each request to the endpoint with the fewest requests in flight (replicas
#: that answer one request at a time, like the local model's slots, where a pinned group would queue).
Balance: TypeAlias = Literal["group", "least_busy"]
# Default bounds of one request, by phase. A server that accepts and never answers costs at most
# DEFAULT_TOTAL_TIMEOUT (not attempts x the per-attempt bound); slow non-streaming generations still fit.
#: Opening a connection.
DEFAULT_CONNECT_TIMEOUT = 10.0
#: The first byte of an answer (and any silence between bytes): a non-streaming answer arrives whole.
DEFAULT_READ_TIMEOUT = 300.0
#: One attempt, from start to the whole body.
DEFAULT_TIMEOUT = 600.0
#: The whole request: every attempt and backoff sleep.
DEFAULT_TOTAL_TIMEOUT = 900.0


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One OpenAI-compatible server. ``model`` overrides the requested model name (registry aliases)."""

    base_url: str
    api_key: str | None = None
    model: str | None = None

    @property
    def root(self) -> str:
        return self.base_url.rstrip("/")


@dataclass(slots=True)
class ClientStats:
    requests: int = 0
    retries: int = 0
    retries_in_flight: int = 0
    failures: int = 0
    #: Attempts the endpoint pushed back on (429, 503, timed out): adaptive concurrency's signal.
    throttled: int = 0
    #: Start time (``time.monotonic()``) of each attempt waiting for its answer, by a per-attempt key.
    waiting: dict[int, float] = field(default_factory=dict)
    #: Attempts answered (successfully); with ``requests`` and ``waiting``, how far a busy server got.
    answered: int = 0
    #: Requests the endpoints answer at once, when known (the local model's slots): more in flight
    #: than this queue at the server, which is busy, not silent. ``None``: unknown (a remote server).
    capacity: int | None = None

    def waiting_longer_than(self, seconds: float) -> int:
        """Attempts sent more than ``seconds`` ago and not answered yet (a silent server shows here)."""
        cutoff = time.monotonic() - seconds
        return sum(1 for t in list(self.waiting.values()) if t < cutoff)


class ClientOptions(TypedDict, total=False):
    """Keyword arguments of ``Client`` that ``with_options``, ``as_client`` and ``owned_client`` pass on."""

    timeout: float | None
    connect_timeout: float
    read_timeout: float
    total_timeout: float | None
    max_retries: int
    backoff_base: float
    backoff_max: float
    max_connections: int
    headers: Mapping[str, str] | None
    headers_from_state: Mapping[str, str] | None
    token_prompts: bool
    max_tokens_field: MaxTokensField
    api: Api
    balance: Balance


class Client:
    """An async client for one or more OpenAI-compatible endpoints.

    Several endpoints are replicas of one model: rollouts of one group are pinned to one endpoint
    (``next_endpoint()`` hands out indices round-robin) so a group shares prefix caches; with
    ``balance="least_busy"`` each request goes to the endpoint with the fewest requests in flight instead.

    Timeouts, by phase (defaults ``DEFAULT_*_TIMEOUT``): ``connect_timeout`` (opening a connection),
    ``read_timeout`` (the first byte of the answer, or any silence after it), ``timeout`` (one attempt;
    with ``openai_client``, that client's own unless given) and ``total_timeout`` (the whole request,
    retries and backoff included; ``None``: no bound beyond the attempts'). A request that runs out of
    time is a ``RequestTimeoutError`` (infra).
    ``backend`` defaults to ``"aiohttp"``, or ``"openai"`` when ``http_client`` or ``openai_client`` is
    given (both are the caller's and never closed here). ``max_connections`` (0 = unlimited) applies to the
    aiohttp transport; with the SDK, give an ``http_client`` with the limits wanted.

    Per request, as the reference SDK's client does: ``headers_from_state`` maps header names to keys of
    the rollout state a chat call is given (``{"X-Session-ID": "example_id"}``: sticky routing of one
    rollout's requests behind a router); ``token_prompts`` continues a conversation from token ids
    (``chat(..., continuation=...)``: vLLM's ``/chat/completions/tokens``, see ``verifiers.clients._tokens``),
    so what the model produced is never re-tokenized. ``None`` sampling values are left out of request
    bodies; ``max_tokens_field`` names the field the token cap is sent in.
    """

    def __init__(
        self,
        base_url: str | Endpoint | Sequence[str | Endpoint] | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_connections: int = 0,
        headers: Mapping[str, str] | None = None,
        headers_from_state: Mapping[str, str] | None = None,
        token_prompts: bool = False,
        max_tokens_field: MaxTokensField = "max_tokens",
        backend: Backend | None = None,
        api: Api = "chat",
        balance: Balance = "group",
        http_client: httpx.AsyncClient | None = None,
        openai_client: openai.AsyncOpenAI | None = None,
    ) -> None:
        sdk_given = http_client is not None or openai_client is not None
        chosen: Backend = backend or ("openai" if sdk_given else "aiohttp")
        if chosen not in get_args(Backend):
            raise ValueError(f"backend must be one of {get_args(Backend)}, not {backend!r}")
        if api not in get_args(Api):
            raise ValueError(f"api must be one of {get_args(Api)}, not {api!r}")
        if max_tokens_field not in get_args(MaxTokensField):
            raise ValueError(
                f"max_tokens_field must be one of {get_args(MaxTokensField)}, not {max_tokens_field!r}"
            )
        if balance not in get_args(Balance):
            raise ValueError(f"balance must be one of {get_args(Balance)}, not {balance!r}")
        if chosen == "aiohttp" and sdk_given:
            raise ValueError("http_client and openai_client are for backend='openai'")
        if chosen == "openai" and max_connections:
            raise ValueError(
                "max_connections is for backend='aiohttp'; give an http_client with limits instead"
            )
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        for name, value in (
            ("timeout", timeout),
            ("connect_timeout", connect_timeout),
            ("read_timeout", read_timeout),
            ("total_timeout", total_timeout),
        ):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        if openai_client is not None:
            if base_url is not None or http_client is not None:
                raise ValueError("openai_client brings its own base URL and HTTP client: pass neither")
            # The key stays inside the SDK client (it may be an Azure key or a token provider).
            raw: list[str | Endpoint] = [Endpoint(str(openai_client.base_url))]
        elif base_url is None:
            raise ValueError("Client needs a base URL (or an openai_client)")
        else:
            raw = [base_url] if isinstance(base_url, str | Endpoint) else list(base_url)
        if not raw:
            raise ValueError("Client needs at least one base URL")
        self.endpoints: list[Endpoint] = [
            e if isinstance(e, Endpoint) else Endpoint(str(e), api_key) for e in raw
        ]
        self.backend: Backend = chosen
        self.api: Api = api
        self.headers_from_state: dict[str, str] = dict(headers_from_state or {})
        self.token_prompts = token_prompts
        self.max_tokens_field: MaxTokensField = max_tokens_field
        self.balance: Balance = balance
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.read_timeout = read_timeout
        self.total_timeout = total_timeout
        self.usage = Usage()
        self.stats = ClientStats()
        self._attempt_keys = itertools.count()
        self._rr = itertools.count()
        self._busy = [0] * len(self.endpoints)  # requests in flight per endpoint (for "least_busy")
        #: Called with (attempt, delay, reason) before each retry sleep; used by progress displays.
        self.on_retry: Callable[[int, float, str], None] | None = None
        self._throttle_listeners: list[Callable[[float], None]] = []
        self._options: dict[str, Any] = {
            "timeout": timeout,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "total_timeout": total_timeout,
            "max_retries": max_retries,
            "backoff_base": backoff_base,
            "backoff_max": backoff_max,
            "max_connections": max_connections,
            "headers": dict(headers) if headers else None,
            "headers_from_state": dict(headers_from_state) if headers_from_state else None,
            "token_prompts": token_prompts,
            "max_tokens_field": max_tokens_field,
            "backend": chosen,
            "api": api,
            "balance": balance,
            "http_client": http_client,
            "openai_client": openai_client,
        }
        roots = [e.root for e in self.endpoints]
        keys = [e.api_key for e in self.endpoints]
        self._transport: Transport
        # Transports are imported on first use: `import verifiers` pays for neither aiohttp nor openai.
        if chosen == "aiohttp":
            from verifiers.clients._aiohttp import AiohttpTransport

            self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
            self._transport = AiohttpTransport(
                roots,
                keys,
                timeout=self.timeout,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                max_connections=max_connections,
                headers=headers or {},
            )
        else:
            from verifiers.clients._openai_sdk import OpenAISDKTransport, timeout_seconds

            if timeout is not None or openai_client is None:
                self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
            else:
                self.timeout = timeout_seconds(openai_client.timeout)[0]
            self._transport = OpenAISDKTransport(
                roots,
                keys,
                timeout=timeout,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                headers=headers or {},
                http_client=http_client,
                sdk_client=openai_client,
            )

    def with_options(self, **overrides: Unpack[ClientOptions]) -> Client:
        """A new client for the same endpoints and backend with some settings changed (it has its own
        connection pool, usage and stats, and is closed on its own)."""
        opts = {**self._options, **overrides}
        if opts["openai_client"] is not None:
            return Client(**opts)
        return Client(self.endpoints, **opts)

    def portable(self) -> tuple[list[Endpoint], dict[str, Any]]:
        """What another process needs to make a client like this one (``Client(endpoints, **options)``):
        plain data, picklable. Raises ``ValueError`` for a client built on a caller's SDK or HTTP client,
        which cannot leave this process."""
        if self._options["openai_client"] is not None or self._options["http_client"] is not None:
            raise ValueError(
                "a client built on your own openai/httpx client cannot be shipped to other processes; "
                "give a base URL (or endpoints) instead"
            )
        opts = {k: v for k, v in self._options.items() if k not in ("openai_client", "http_client")}
        return list(self.endpoints), opts

    def add_throttle_listener(self, fn: Callable[[float], None]) -> Callable[[], None]:
        """Call ``fn(sent_at)`` whenever an attempt meets push-back (429, 503, a timeout); ``sent_at`` is
        the attempt's ``time.monotonic()`` start. Returns a function that removes the listener."""
        self._throttle_listeners.append(fn)
        return lambda: self._throttle_listeners.remove(fn) if fn in self._throttle_listeners else None

    def __repr__(self) -> str:
        return (
            f"Client({[redact_url(u) for u in self.base_urls]!r}, backend={self.backend!r}, api={self.api!r})"
        )

    @property
    def base_urls(self) -> list[str]:
        return [e.base_url for e in self.endpoints]

    def next_endpoint(self) -> int:
        """The endpoint index for a new group (round-robin)."""
        return next(self._rr) % len(self.endpoints)

    async def aclose(self) -> None:
        """Close what this client opened (its connection pool; never a caller's SDK or HTTP client)."""
        await self._transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- public calls ------------------------------------------------------------------------------
    async def chat(
        self,
        model: str,
        messages: Messages,
        *,
        sampling_args: SamplingArgs | None = None,
        tools: list[dict[str, Any]] | None = None,
        endpoint: int | None = None,
        state: Mapping[str, Any] | None = None,
        continuation: Continuation | None = None,
    ) -> ModelResponse:
        """One chat completion (or Responses API call, with ``api="responses"``). Raises a
        ``verifiers.errors`` error after retries are exhausted.

        ``state``: the rollout's state, read for ``headers_from_state``. ``continuation``: the token ids of
        the conversation so far (the previous call's prompt and completion) and how many leading
        ``messages`` they cover; with ``token_prompts`` the request then goes to
        ``/chat/completions/tokens`` with those ids followed by the template's tokens for the newer
        messages (when that cannot be done the messages are sent as usual)."""
        idx = self._pick(endpoint)
        ep = self.endpoints[idx]
        name = ep.model or model
        fields = request_fields(sampling_args)
        headers = self._state_headers(state)
        if self.api == "responses":
            body = await self._send(
                idx, "responses", responses_payload(name, messages, fields, tools), headers
            )
            resp = decode_responses(body, ep.base_url)
        else:
            if self.max_tokens_field == "max_completion_tokens" and "max_tokens" in fields:
                fields["max_completion_tokens"] = fields.pop("max_tokens")
            payload: dict[str, Any] = {"model": name, "messages": messages}
            if fields:
                payload.update(fields)
            if tools:
                payload["tools"] = tools
            prompt_ids = None
            if continuation is not None and self.token_prompts and isinstance(messages, list):

                async def tokenize(body: dict[str, Any]) -> Any:
                    return await self._send(idx, "tokenize", {"model": name, **body}, headers)

                prompt_ids = await continuation_prompt_ids(tokenize, continuation, messages, tools)
            if prompt_ids is not None:
                body = await self._send(idx, "chat_tokens", {**payload, "tokens": prompt_ids}, headers)
            else:
                body = await self._send(idx, "chat", payload, headers)
            resp = decode_chat(body, ep.base_url)
        self.usage.add(resp.prompt_tokens, resp.completion_tokens)
        return resp

    def _state_headers(self, state: Mapping[str, Any] | None) -> dict[str, str] | None:
        """``headers_from_state`` resolved against a rollout's state (keys it lacks send no header)."""
        if not self.headers_from_state or not state:
            return None
        out = {h: str(state[k]) for h, k in self.headers_from_state.items() if state.get(k) is not None}
        return out or None

    async def complete(
        self,
        model: str,
        prompt: str,
        *,
        sampling_args: SamplingArgs | None = None,
        endpoint: int | None = None,
    ) -> ModelResponse:
        """One plain (text) completion (``/completions``, whatever ``api`` is)."""
        idx = self._pick(endpoint)
        ep = self.endpoints[idx]
        payload: dict[str, Any] = {"model": ep.model or model, "prompt": prompt}
        payload.update(request_fields(sampling_args))
        body = await self._send(idx, "completions", payload)
        resp = decode_completion(body, ep.base_url)
        self.usage.add(resp.prompt_tokens, resp.completion_tokens)
        return resp

    async def list_models(self, endpoint: int = 0) -> list[str]:
        """Model ids served by an endpoint (``GET /models``); raises like the other calls."""
        body = await self._send(endpoint % len(self.endpoints), "models", None)
        data = body.get("data") if isinstance(body, dict) else None
        return [str(m.get("id")) for m in data or [] if isinstance(m, dict)]

    # --- retries -----------------------------------------------------------------------------------
    def _pick(self, endpoint: int | None) -> int:
        if self.balance == "least_busy" and len(self.endpoints) > 1:
            fewest = min(self._busy)
            idle = [i for i, n in enumerate(self._busy) if n == fewest]
            return idle[next(self._rr) % len(idle)]
        if endpoint is None:
            return self.next_endpoint()
        return endpoint % len(self.endpoints)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        # Full jitter: spreads the retries of many concurrent rollouts so they do not arrive together.
        return random.uniform(0, min(self.backoff_max, self.backoff_base * (2**attempt)))

    async def _send(
        self,
        idx: int,
        route: Route,
        payload: dict[str, Any] | None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        self._busy[idx] += 1
        try:
            return await self._send_attempts(idx, route, payload, headers)
        finally:
            self._busy[idx] -= 1

    async def _send_attempts(
        self,
        idx: int,
        route: Route,
        payload: dict[str, Any] | None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The one retry policy, whichever transport sends the attempts; ``total_timeout`` bounds them
        all (each attempt gets what is left of it)."""
        transport = self._transport
        attempts = self.max_retries + 1
        last: TransientError | None = None
        deadline = None if self.total_timeout is None else time.monotonic() + self.total_timeout
        waiting = self.stats.waiting
        self_bounded = getattr(transport, "bounds_attempts", False)
        attempt = 0
        for attempt in range(attempts):
            self.stats.requests += 1
            left = None if deadline is None else deadline - time.monotonic()
            # The attempt bound too (a transport may only bound phases: httpx re-arms its read timeout).
            limit = self.timeout if left is None else min(left, self.timeout)
            key = next(self._attempt_keys)
            waiting[key] = sent_at = time.monotonic()
            try:
                if self_bounded and limit >= self.timeout:
                    body = await transport.send(idx, route, payload, headers)
                else:
                    async with asyncio.timeout(limit):
                        body = await transport.send(idx, route, payload, headers)
                self.stats.answered += 1
                return body
            except TransientError as exc:
                last = exc
            except TimeoutError:
                what = (
                    f"no answer within the request's total timeout of {self.total_timeout:g}s"
                    if left is not None and left <= self.timeout
                    else f"request timed out after {self.timeout:g}s"
                )
                last = TransientError(transport.url(idx, route), what, timed_out=True)
            except VerifiersError:
                self.stats.failures += 1
                raise
            finally:
                waiting.pop(key, None)
            if last.throttled:
                self.stats.throttled += 1
                for listener in list(self._throttle_listeners):
                    listener(sent_at)
            if attempt + 1 >= attempts:
                break
            delay = self._backoff(attempt, last.retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                break  # no time left for another attempt
            self.stats.retries += 1
            if self.on_retry is not None:
                self.on_retry(attempt + 1, delay, last.reason)
            self.stats.retries_in_flight += 1
            try:
                await asyncio.sleep(delay)
            finally:
                self.stats.retries_in_flight -= 1
        self.stats.failures += 1
        assert last is not None  # the loop runs at least once and only falls through after a failure
        raise last.final(attempt + 1)
