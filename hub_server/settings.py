"""Hub settings, read from ``VF_HUB_*`` environment variables (pydantic-settings).

Nothing here touches the disk: directories are created by whoever needs them (``create_app``, the CLI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MiB = 1024 * 1024


def default_data_dir() -> Path:
    """``$VF_HUB_DATA_DIR`` or the platform's user data directory (e.g. ``~/.local/share/verifiers-hub``)."""
    return Path(platformdirs.user_data_dir("verifiers-hub", appauthor=False))


class HubSettings(BaseSettings):
    """Server configuration. Every field can be set as ``VF_HUB_<FIELD>`` (case-insensitive)."""

    model_config = SettingsConfigDict(env_prefix="VF_HUB_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir, description="Holds hub.db and blobs/.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user:pw@host/db. Default: SQLite in data_dir.",
    )
    blob_dir: Path | None = Field(default=None, description="Artifact directory. Default: data_dir/blobs.")
    base_url: str | None = Field(
        default=None, description="Public URL of the hub (links in the UI); default: taken from the request."
    )
    max_file_size: int = Field(default=20 * MiB, gt=0, description="Largest wheel or sdist accepted (bytes).")
    max_unpacked_size: int = Field(
        default=100 * MiB, gt=0, description="Largest total uncompressed size of one archive (bytes)."
    )
    max_archive_members: int = Field(default=5000, gt=0, description="Most members one archive may have.")
    max_readme_size: int = Field(default=512 * 1024, gt=0, description="Longest README stored (bytes).")
    default_visibility: Literal["public", "private"] = "public"
    cache_poll_seconds: float = Field(
        default=2.0,
        gt=0,
        description="Unused: every request now checks the database's change counter itself; kept so "
        "existing configurations still load.",
    )
    cookie_secure: bool = Field(default=False, description="Mark the web session cookie Secure (HTTPS).")
    open_signup: bool = Field(
        default=False,
        description="Let anyone create a user and its first (publish) token on the web login page; off by "
        "default: then an admin creates users (`vf-hub user create`).",
    )
    auto_migrate: bool = Field(default=True, description="Apply migrations when `vf-hub serve` starts.")
    workers: int = Field(
        default=1,
        ge=1,
        description="Worker processes sharing the database (`vf-hub serve --workers` sets it).",
    )
    db_pool_size: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Database connections (and request threads) per worker. Default: 32, capped on "
        "PostgreSQL so that all workers fit in max_connections.",
    )
    db_reserved_connections: int = Field(
        default=5, ge=0, description="PostgreSQL connections left free for admin tools and migrations."
    )
    upstream_index: str = Field(
        default="https://pypi.org/simple/",
        description="Simple index that /simple/<name>/ falls through to for names the hub does not own; "
        "'none' disables the fall-through.",
    )
    upstream_ttl_seconds: float = Field(
        default=300.0, ge=0, description="How long upstream pages are cached."
    )
    upstream_timeout_seconds: float = Field(
        default=15.0, gt=0, description="Timeout of one upstream request."
    )
    sdk_cache_dir: Path | None = Field(
        default=None,
        description="Where the SDK's wheel and sdist are built, by version. Default: data_dir/sdk.",
    )
    sdk_dist_dir: Path | None = Field(
        default=None,
        description="A directory holding the SDK's wheel and sdist for the running version, served instead "
        "of building them (for hubs installed from a wheel, without a source tree).",
    )
    smoke_checks: bool = Field(
        default=True, description="Run a sandboxed smoke check of every published version (never blocks it)."
    )
    smoke_workers: int = Field(default=1, ge=1, le=16, description="Smoke checks that run at once.")
    smoke_backend: str | None = Field(
        default=None, description="Sandbox backend of the checks (runsc, bwrap); default: the best available."
    )
    smoke_timeout_seconds: float = Field(
        default=300.0, gt=0, description="Wall-clock budget of one smoke check (install + load + rollout)."
    )
    smoke_max_dependency_mb: int = Field(
        default=256,
        ge=1,
        description="Most MB of requirement wheels beyond the SDK one smoke check downloads (then it fails).",
    )
    smoke_index_url: str | None = Field(
        default=None,
        description="The hub's own simple index, where a check gets requirements beyond the SDK (wheels, "
        "on the host). Default: base_url + /simple/; `vf-hub serve` sets it to its own address.",
    )

    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses of the reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto the hub believes (download counts go by client address). Empty: none, the "
        "peer's own address is the client's, whatever headers it sends (also from loopback).",
    )

    @property
    def trusted_proxy_list(self) -> list[str]:
        return [p.strip() for p in self.trusted_proxies.split(",") if p.strip()]

    def uvicorn_proxy_options(self) -> dict[str, object]:
        """uvicorn's proxy options for these settings: forwarded headers only from the configured proxies
        (uvicorn's own default believes them from 127.0.0.1, so any local process could pose as any
        number of clients)."""
        proxies = self.trusted_proxy_list
        if not proxies:
            return {"proxy_headers": False}
        return {"proxy_headers": True, "forwarded_allow_ips": ",".join(proxies)}

    @property
    def resolved_smoke_index_url(self) -> str | None:
        if self.smoke_index_url:
            return self.smoke_index_url
        return f"{self.base_url.rstrip('/')}/simple/" if self.base_url else None

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'hub.db'}"

    @property
    def resolved_blob_dir(self) -> Path:
        return self.blob_dir or self.data_dir / "blobs"

    @property
    def resolved_upstream_index(self) -> str | None:
        """The upstream simple index URL with a trailing slash, or None when the fall-through is off."""
        url = self.upstream_index.strip()
        if not url or url.lower() == "none":
            return None
        return url if url.endswith("/") else url + "/"

    @property
    def resolved_sdk_cache_dir(self) -> Path:
        return self.sdk_cache_dir or self.data_dir / "sdk"

    @property
    def max_request_size(self) -> int:
        """A publish request carries two files plus a few form fields."""
        return 2 * self.max_file_size + MiB
