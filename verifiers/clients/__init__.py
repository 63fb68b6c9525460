"""Talking to model servers (OpenAI-compatible HTTP)."""

from verifiers.clients.client import Client, ClientStats, Endpoint

__all__ = ["Client", "ClientStats", "Endpoint"]
