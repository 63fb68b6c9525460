"""The endpoint registry: model aliases → OpenAI-compatible endpoints, read from a TOML file.

The format mirrors the upstream ``ENDPOINTS`` dict, one table per alias::

    [gpt-4.1-mini]                        # -m gpt-4.1-mini (dotted names need no quotes here)
    model = "gpt-4.1-mini"                # model name sent to the server (default: the alias)
    url = "https://api.openai.com/v1"
    key = "OPENAI_API_KEY"                # name of the environment variable holding the key (optional)

    [[qwen3-4b]]                          # an array of tables: replicas of one model, used round-robin
    model = "Qwen/Qwen3-4B"
    url = "http://127.0.0.1:8000/v1"
    [[qwen3-4b]]
    model = "Qwen/Qwen3-4B"
    url = "http://127.0.0.1:8001/v1"

Keys are names of environment variables, never the secrets themselves, so the file can be committed.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers._urls import redact_url
from verifiers.clients.client import Endpoint

#: Where ``vf-eval`` looks for a registry when ``-e`` is not given.
DEFAULT_REGISTRY_PATH = Path("configs/endpoints.toml")
_FIELDS = frozenset({"model", "url", "key"})


class RegistryError(ValueError):
    """The registry file is unreadable or malformed, or an entry cannot be used."""


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One endpoint of an alias."""

    alias: str
    model: str
    url: str
    #: Name of the environment variable holding the API key; ``None`` for servers without auth.
    key_var: str | None = None

    def endpoint(self, environ: Mapping[str, str] | None = None) -> Endpoint:
        """The client endpoint, reading the key from ``environ`` (default ``os.environ``).

        Raises ``RegistryError`` when the entry names a key variable that is not set."""
        env = os.environ if environ is None else environ
        key: str | None = None
        if self.key_var:
            key = env.get(self.key_var)
            if key is None:
                raise RegistryError(
                    f"endpoint {self.alias!r} ({redact_url(self.url)}) needs the API key variable {self.key_var}, "
                    "which is not set"
                )
        return Endpoint(self.url, key, self.model)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(alias, table or array) pairs. An unquoted ``[gpt-4.1-mini]`` is a *dotted* TOML key, parsed as
    nested tables ``gpt-4`` → ``1-mini``; joining the parts back gives the alias the user wrote."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        alias = f"{prefix}{key}"
        nested = (
            isinstance(value, Mapping)
            and bool(value)
            and not (set(value) & _FIELDS)
            and all(isinstance(v, Mapping | list) for v in value.values())
        )
        if nested:
            out.extend(_flatten(value, f"{alias}."))
        else:
            out.append((alias, value))
    return out


class EndpointRegistry:
    """Aliases → one or more ``RegistryEntry`` (several entries are replicas)."""

    def __init__(self, entries: Mapping[str, list[RegistryEntry]], source: Path | None = None) -> None:
        self._entries = {alias: list(rows) for alias, rows in entries.items()}
        self.source = source

    @classmethod
    def load(cls, path: str | Path) -> EndpointRegistry:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise RegistryError(f"endpoint registry {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise RegistryError(f"endpoint registry {path} is not valid TOML: {exc}") from None
        return cls.from_dict(data, source=path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: Path | None = None) -> EndpointRegistry:
        where = f" in {source}" if source else ""
        entries: dict[str, list[RegistryEntry]] = {}
        for alias, value in _flatten(data):
            rows = value if isinstance(value, list) else [value]
            if not rows:
                raise RegistryError(f"alias {alias!r}{where} has no endpoints")
            parsed: list[RegistryEntry] = []
            for i, row in enumerate(rows):
                label = f"{alias!r}" + (f" (replica {i + 1})" if isinstance(value, list) else "")
                if not isinstance(row, Mapping):
                    raise RegistryError(f"alias {label}{where} must be a table with url/model/key")
                unknown = sorted(set(row) - _FIELDS)
                if unknown:
                    raise RegistryError(
                        f"alias {label}{where} has unknown field(s) {', '.join(unknown)}; "
                        "allowed: model, url, key"
                    )
                url = row.get("url")
                if not isinstance(url, str) or not url:
                    raise RegistryError(f"alias {label}{where} needs a 'url' string")
                model = row.get("model", alias)
                key = row.get("key")
                if not isinstance(model, str) or (key is not None and not isinstance(key, str)):
                    raise RegistryError(f"alias {label}{where}: 'model' and 'key' must be strings")
                parsed.append(RegistryEntry(alias, model, url, key or None))
            entries[alias] = parsed
        return cls(entries, source)

    @property
    def aliases(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, alias: object) -> bool:
        return alias in self._entries

    def get(self, alias: str) -> list[RegistryEntry] | None:
        rows = self._entries.get(alias)
        return list(rows) if rows is not None else None

    def endpoints(
        self, alias: str, environ: Mapping[str, str] | None = None, *, key_var: str | None = None
    ) -> list[Endpoint]:
        """Client endpoints for ``alias`` (``key_var`` overrides every entry's key variable)."""
        rows = self._entries.get(alias)
        if rows is None:
            raise RegistryError(f"no alias {alias!r} in the endpoint registry")
        if key_var is not None:
            rows = [RegistryEntry(r.alias, r.model, r.url, key_var) for r in rows]
        return [r.endpoint(environ) for r in rows]


__all__ = ["DEFAULT_REGISTRY_PATH", "EndpointRegistry", "RegistryEntry", "RegistryError"]
