"""Which key variables and endpoints a request may make ``vf-serve`` use, fixed when the server starts.

A rollouts request (HTTP ``POST /rollouts``, ZMQ ``client_config``) names the model endpoint and the name
of the variable in the *server's* environment that holds its key; the server then sends that key to that
endpoint. Without a policy any client could name any variable (``AWS_SECRET_ACCESS_KEY``) and any URL, and
receive the secret as ``Authorization: Bearer …``. So:

- only the variables given at start (``--api-key-var``, repeatable; default ``OPENAI_API_KEY`` and
  ``VLLM_API_KEY``, the OpenAI SDK's and prime-rl's conventional names) may be named;
- when base URLs are given (``--allow-base-url``, repeatable), every endpoint of a request must be one of
  them or below one (same scheme, host and port; the path on a segment boundary); without them any
  endpoint may receive an allowed key, so give them wherever clients are not all trusted;
- endpoints are plain ``http(s)://host[:port]/path`` URLs: no user info, query, fragment, backslash or
  whitespace, so every URL parser on the way reads the same host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from verifiers._urls import redact_url

DEFAULT_KEY_VARS = ("OPENAI_API_KEY", "VLLM_API_KEY")
_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# RFC 3986 unreserved, '%', and the gen-delims a plain URL needs (':', '/', '[', ']' for IPv6): no '@',
# '?', '#', '\\', whitespace or controls, which URL parsers disagree on.
_PLAIN_URL = re.compile(r"^https?://[A-Za-z0-9._~%:/\[\]-]+$", re.IGNORECASE)


class ClientNotAllowed(ValueError):
    """A request named a key variable or an endpoint the server was not started to allow (HTTP 403)."""


def _endpoint(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with a trailing '/') of a plain http(s) URL; ValueError otherwise."""
    if not _PLAIN_URL.match(url):
        raise ValueError(f"{redact_url(url)!r} is not a plain http(s)://host[:port]/path URL")
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"{redact_url(url)!r} has no host")
    port = parts.port or (443 if scheme == "https" else 80)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return scheme, host, port, path


@dataclass(frozen=True)
class ClientPolicy:
    key_vars: frozenset[str] = frozenset(DEFAULT_KEY_VARS)
    #: Allowed endpoint prefixes as (scheme, host, port, path); empty: any endpoint.
    base_urls: tuple[tuple[str, str, int, str], ...] = ()

    @classmethod
    def make(cls, key_vars: Iterable[str] | None = None, base_urls: Iterable[str] = ()) -> ClientPolicy:
        """A policy from command-line values; ValueError naming a bad one."""
        names = frozenset(DEFAULT_KEY_VARS if key_vars is None else key_vars)
        for name in names:
            if not _VAR.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return cls(names, tuple(_endpoint(u) for u in base_urls))

    def check(self, base_url: str | Sequence[str], api_key_var: str | None) -> None:
        """``ClientNotAllowed`` unless a request may use ``api_key_var`` with every URL of ``base_url``."""
        if api_key_var is not None and api_key_var not in self.key_vars:
            allowed = ", ".join(sorted(self.key_vars)) or "none"
            raise ClientNotAllowed(
                f"api_key_var {api_key_var!r} is not one this server sends (allowed: {allowed}); the server "
                "operator allows more with `vf-serve --api-key-var NAME`"
            )
        for url in [base_url] if isinstance(base_url, str) else list(base_url):
            try:
                scheme, host, port, path = _endpoint(str(url))
            except ValueError as exc:
                raise ClientNotAllowed(f"base_url {redact_url(url)[:200]!r}: {exc}") from None
            if self.base_urls and not any(
                (scheme, host, port) == (s, h, p) and path.startswith(prefix)
                for s, h, p, prefix in self.base_urls
            ):
                raise ClientNotAllowed(
                    f"base_url {redact_url(url)!r} is not an endpoint this server calls; the server operator allows one "
                    "with `vf-serve --allow-base-url URL`"
                )


__all__ = ["DEFAULT_KEY_VARS", "ClientNotAllowed", "ClientPolicy"]
