"""Talking to model servers (OpenAI-compatible HTTP)."""

from verifiers.clients._as_client import ClientLike, as_client, owned_client
from verifiers.clients.client import Api, Backend, Client, ClientOptions, ClientStats, Endpoint

__all__ = [
    "Api",
    "Backend",
    "Client",
    "ClientLike",
    "ClientOptions",
    "ClientStats",
    "Endpoint",
    "as_client",
    "owned_client",
]
