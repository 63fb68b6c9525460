"""``as_client`` / ``owned_client`` and ``openai`` SDK interop, against the scripted server: an ``AsyncOpenAI``
taken over by the fast transport or sent through, a caller's ``httpx.AsyncClient``, Azure OpenAI (``api-key``
header, ``api-version`` query, deployment URLs), and ``openai`` staying unimported until used.

These are single-transport on purpose: each checks which transport a given input ends up on.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any, cast

import httpx
import openai
import pytest

from tests.scripted_server import Reply, ScriptedServer
from verifiers.clients import Backend, Client, ClientOptions, Endpoint, as_client, owned_client
from verifiers.errors import AuthenticationError, EndpointUnavailableError, RequestTimeoutError

MSGS = [{"role": "user", "content": "hi"}]
API_VERSION = "2024-06-01"


def _agent(server: ScriptedServer) -> str:
    return str(server.request_meta[-1]["headers"]["user-agent"])


async def test_a_client_is_returned_as_is_and_not_closed_by_owned_client(scripted: ScriptedServer) -> None:
    client = Client(scripted.url)
    assert as_client(client) is client
    async with owned_client(client) as c:
        assert c is client
        await c.chat("m", MSGS)
    assert (await client.chat("m", MSGS)).text == "ok"  # still usable: owned_client left it open
    await client.aclose()
    with pytest.raises(TypeError, match="with_options"):
        as_client(client, max_retries=1)


async def test_base_urls_make_owned_clients(scripted: ScriptedServer) -> None:
    made = as_client(scripted.url, api_key="sk-u", max_retries=1)
    assert isinstance(made, Client) and made.backend == "aiohttp" and made.max_retries == 1
    await made.aclose()
    assert as_client([scripted.url, Endpoint(scripted.url)]).base_urls == [scripted.url, scripted.url]
    async with owned_client(scripted.url, api_key="sk-u", backend="openai") as c:
        assert c.backend == "openai"
        await c.chat("m", MSGS)
    assert scripted.request_meta[-1]["headers"]["authorization"] == "Bearer sk-u"
    with pytest.raises(TypeError, match="AsyncOpenAI"):
        as_client(42)  # type: ignore[arg-type]


async def test_async_openai_is_taken_over_by_the_fast_transport(scripted: ScriptedServer) -> None:
    scripted.required_headers = {"authorization": "Bearer sk-sdk"}
    sdk = openai.AsyncOpenAI(
        base_url=scripted.url,
        api_key="sk-sdk",
        organization="org-1",
        project="proj-1",
        default_headers={"X-Trace": "t-1"},
        timeout=120.0,
        max_retries=4,
    )
    client = as_client(sdk)
    assert client is not sdk
    assert (client.backend, client.max_retries, client.timeout) == ("aiohttp", 4, 120.0)
    assert client.base_urls == [str(sdk.base_url).rstrip("/")]  # recorded as the user wrote it
    async with client:
        assert (await client.chat("m", MSGS)).text == "ok"
    headers = scripted.request_meta[-1]["headers"]
    assert headers["x-trace"] == "t-1"
    assert (headers["openai-organization"], headers["openai-project"]) == ("org-1", "proj-1")
    assert "OpenAI" not in _agent(scripted)  # sent by aiohttp, not through the SDK
    with pytest.raises(TypeError, match="api_key"):
        as_client(sdk, api_key="other")
    with pytest.raises(TypeError, match="AsyncOpenAI"):
        as_client(openai.OpenAI(base_url=scripted.url, api_key="k"))  # type: ignore[arg-type]
    await sdk.close()


@pytest.mark.parametrize("backend", ["aiohttp", "openai"])
async def test_async_openai_options_override_what_it_carries(
    scripted: ScriptedServer, backend: Backend
) -> None:
    sdk = openai.AsyncOpenAI(base_url=scripted.url, api_key="k", default_headers={"X-A": "1"}, timeout=50.0)
    opts: ClientOptions = {"max_retries": 0, "headers": {"X-B": "2"}, "api": "responses", "timeout": 0.3}
    # Headers and route from an answered call under a generous timeout (a 0.3 s one can expire on a loaded
    # machine before the request is even sent, and then the server has nothing to show).
    async with owned_client(sdk, backend=backend, **{**opts, "timeout": 60.0}) as c:
        await c.chat("m", MSGS)
    headers = scripted.request_meta[0]["headers"]
    assert (headers["x-a"], headers["x-b"]) == ("1", "2")
    assert scripted.request_meta[0]["path"] == "/v1/responses"
    async with owned_client(sdk, backend=backend, **opts) as c:
        assert (c.backend, c.max_retries, c.api, c.timeout) == (backend, 0, "responses", 0.3)
        scripted.enqueue(Reply(hold=True))  # never answered while the test runs: no race with the 0.3 s
        with pytest.raises(RequestTimeoutError):  # the overriding timeout is the one applied
            await c.chat("m", MSGS)
    assert sdk.timeout == 50.0 and sdk.max_retries == 2  # the caller's client is unchanged
    await sdk.close()


async def test_async_openai_sent_through_the_sdk_on_request(scripted: ScriptedServer) -> None:
    scripted.required_headers = {"authorization": "Bearer sk-sdk"}
    sdk = openai.AsyncOpenAI(base_url=scripted.url, api_key="sk-sdk", default_headers={"X-Trace": "t"})
    async with owned_client(sdk, backend="openai") as c:
        assert c.backend == "openai"
        assert (await c.chat("m", MSGS)).text == "ok"
    assert "OpenAI" in _agent(scripted) and scripted.request_meta[-1]["headers"]["x-trace"] == "t"
    # Closing our Client left the caller's SDK client open.
    assert not sdk.is_closed()
    assert (await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])).choices
    await sdk.close()


async def test_sdk_retries_are_off_so_only_ours_apply(scripted: ScriptedServer) -> None:
    sdk = openai.AsyncOpenAI(base_url=scripted.url, api_key="k", max_retries=2)
    scripted.enqueue(*[Reply(status=502) for _ in range(3)])
    async with owned_client(sdk, backend="openai", backoff_base=0.01) as c:
        with pytest.raises(EndpointUnavailableError, match="3 attempts"):
            await c.chat("m", MSGS)
        assert c.stats.retries == 2
    assert len(scripted.requests) == 3  # 1 + our 2 retries; the SDK retried nothing on top
    await sdk.close()


async def test_a_custom_http_client_goes_through_the_sdk(scripted: ScriptedServer) -> None:
    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(str(request.url))

    async with httpx.AsyncClient(headers={"X-Via": "mine"}, event_hooks={"request": [hook]}) as http:
        async with Client(scripted.url, http_client=http) as c:
            assert c.backend == "openai"
            await c.chat("m", MSGS)
        assert not http.is_closed  # the caller's: never closed by the Client
        assert seen == [scripted.url + "/chat/completions"]
        assert scripted.request_meta[-1]["headers"]["x-via"] == "mine"
        # An AsyncOpenAI over a custom http_client is sent through the SDK, never silently without it.
        # openai 3.x types http_client as httpx2's client, 1.x as httpx's; both accept an httpx one.
        sdk = openai.AsyncOpenAI(base_url=scripted.url, api_key="k", http_client=cast(Any, http))
        async with owned_client(sdk) as c2:
            assert c2.backend == "openai"
            await c2.chat("m", MSGS)
        assert len(seen) == 2
        with pytest.raises(ValueError, match="custom http_client"):
            as_client(sdk, backend="aiohttp")
    with pytest.raises(ValueError, match="backend='openai'"):
        Client(scripted.url, backend="aiohttp", http_client=http)
    with pytest.raises(ValueError, match="max_connections"):
        Client(scripted.url, backend="openai", max_connections=8)


def _azure(server: ScriptedServer, key: str = "az-key") -> openai.AsyncAzureOpenAI:
    root = server.url.removesuffix("/v1")
    return openai.AsyncAzureOpenAI(api_key=key, api_version=API_VERSION, azure_endpoint=root, max_retries=1)


async def test_azure_goes_through_the_sdk_with_its_auth_and_urls(scripted: ScriptedServer) -> None:
    scripted.required_headers = {"api-key": "az-key"}
    scripted.required_query = {"api-version": API_VERSION}
    azure = _azure(scripted)
    async with owned_client(azure) as c:
        assert (c.backend, c.max_retries) == ("openai", 1)
        r = await c.chat("my-deployment", MSGS, sampling_args={"max_tokens": 4})
        assert r.text == "ok" and r.endpoint is not None and "/openai" in r.endpoint
        assert (await c.complete("my-deployment", "x")).text == "ok"
        assert await c.list_models() == ["scripted"]
    chat_meta, completion_meta, models_meta = scripted.request_meta
    assert chat_meta["path"] == "/openai/deployments/my-deployment/chat/completions"
    assert chat_meta["deployment"] == "my-deployment"
    assert chat_meta["query"]["api-version"] == API_VERSION and chat_meta["headers"]["api-key"] == "az-key"
    assert completion_meta["path"] == "/openai/deployments/my-deployment/completions"
    assert models_meta["path"] == "/openai/models"
    with pytest.raises(ValueError, match="Azure"):
        as_client(azure, backend="aiohttp")
    await azure.close()


async def test_azure_responses_api_and_wrong_key(scripted: ScriptedServer) -> None:
    scripted.required_headers = {"api-key": "az-key"}
    scripted.required_query = {"api-version": API_VERSION}
    good, bad = _azure(scripted), _azure(scripted, key="wrong")
    async with owned_client(good, api="responses") as c:
        assert (await c.chat("my-deployment", MSGS)).text == "ok"
    assert scripted.request_meta[-1]["path"] == "/openai/responses"
    assert scripted.requests[-1]["model"] == "my-deployment"
    async with owned_client(bad) as c:
        with pytest.raises(AuthenticationError):
            await c.chat("my-deployment", MSGS)
    await good.close()
    await bad.close()


def test_importing_the_sdk_does_not_import_openai() -> None:
    code = (
        "import sys, verifiers, verifiers.clients\n"
        "c = verifiers.clients.as_client('http://127.0.0.1:9/v1')\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
