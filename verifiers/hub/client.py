"""Typed client for the Environments Hub JSON API (resolve, search, publish, yank, download).

Configuration, most specific first:

- URL: the ``url`` argument, ``$VF_HUB_URL``, the config file, ``http://127.0.0.1:8000``;
- token: the ``token`` argument, ``$VF_HUB_TOKEN``, the config file — the file's token is only sent to
  the URL stored next to it, so pointing ``VF_HUB_URL`` elsewhere never leaks it.

The config file is written by ``vf-hub login``: ``<user config dir>/verifiers-hub/config.toml`` (or
``$VF_HUB_CONFIG``), mode 0600.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self
from urllib.parse import quote, urlsplit, urlunsplit

import platformdirs
import tomli_w
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import httpx

DEFAULT_URL = "http://127.0.0.1:8000"


class HubClientError(Exception):
    """A refused or failed hub request; ``status_code`` is None when the hub could not be reached."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


# --- configuration ----------------------------------------------------------------------------------
def config_path() -> Path:
    override = os.environ.get("VF_HUB_CONFIG")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir("verifiers-hub", appauthor=False)) / "config.toml"


def load_config_file() -> dict[str, str]:
    path = config_path()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise HubClientError(f"{path} is not valid TOML: {exc}") from None
    return {k: str(v) for k, v in data.items() if k in ("url", "token")}


def save_config(url: str, token: str) -> Path:
    """Write URL and token to the config file, readable by the user only (written atomically)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            tomli_w.dump({"url": _clean_url(url), "token": token}, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _clean_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise HubClientError(f"hub URL {url!r} must start with http:// or https://")
    return url


@dataclass(frozen=True)
class HubConfig:
    url: str
    token: str | None

    @classmethod
    def load(cls, url: str | None = None, token: str | None = None) -> HubConfig:
        stored = load_config_file()
        chosen = _clean_url(url or os.environ.get("VF_HUB_URL") or stored.get("url") or DEFAULT_URL)
        if token is None:
            token = os.environ.get("VF_HUB_TOKEN") or None
        if token is None and stored.get("token") and _clean_url(stored.get("url", DEFAULT_URL)) == chosen:
            token = stored["token"]
        return cls(url=chosen, token=token)


# --- response models (the client's view; unknown fields are ignored) ---------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class HubFile(_Model):
    filename: str
    kind: Literal["bdist_wheel", "sdist"]
    sha256: str
    size: int
    url: str
    uploaded_at: datetime


class VersionInfo(_Model):
    version: str
    summary: str = ""
    yanked: bool
    yanked_reason: str = ""
    requires_python: str | None
    dependencies: list[str]
    content_hash: str
    created_at: datetime
    files: list[HubFile]


class PublishedVersion(VersionInfo):
    environment: str
    uploader: str | None = None


class ResolvedVersion(_Model):
    owner: str
    name: str
    full_name: str
    module: str
    version: str
    yanked: bool
    content_hash: str
    requires_python: str | None
    dependencies: list[str]
    files: list[HubFile]

    def file(self, kind: Literal["bdist_wheel", "sdist"]) -> HubFile | None:
        return next((f for f in self.files if f.kind == kind), None)


class EnvironmentInfo(_Model):
    owner: str
    name: str
    full_name: str
    module: str
    description: str
    tags: list[str]
    visibility: Literal["public", "private"]
    latest_version: str | None
    downloads: int
    stars: int
    created_at: datetime
    updated_at: datetime
    versions: list[VersionInfo] = []


class SearchResult(_Model):
    items: list[EnvironmentInfo]
    total: int
    page: int
    per_page: int


class WhoAmI(_Model):
    username: str
    is_admin: bool
    scopes: list[str]
    namespaces: list[str]


# --- the client -----------------------------------------------------------------------------------------
class HubClient:
    """Synchronous client (httpx). Use as a context manager or call ``close()``."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        try:
            import httpx
        except ModuleNotFoundError:
            raise HubClientError("the hub client needs httpx: pip install 'verifiers-sdk[hub]'") from None
        self._httpx = httpx
        cfg = HubConfig.load(url, token)
        self.url, self.token = cfg.url, cfg.token
        headers = {"User-Agent": "verifiers-sdk-hub-client"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- plumbing ---
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except self._httpx.HTTPError as exc:
            raise HubClientError(f"cannot reach the hub at {self.url}: {exc}") from None
        if response.is_success:
            return response
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if isinstance(detail, list):  # FastAPI validation errors
            detail = "; ".join(str(d.get("msg", d)) for d in detail if isinstance(d, dict))
        raise HubClientError(f"{method} {path}: HTTP {response.status_code}: {detail}", response.status_code)

    # --- URLs ---
    def index_url(self, *, with_token: bool = False) -> str:
        """The simple index URL; with the token embedded in pip's ``__token__:<token>@`` form if asked."""
        base = f"{self.url}/simple/"
        if not (with_token and self.token):
            return base
        parts = urlsplit(base)
        netloc = f"__token__:{quote(self.token, safe='')}@{parts.netloc}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def environment_url(self, full_name: str) -> str:
        return f"{self.url}/{full_name}"

    # --- API ---
    def whoami(self) -> WhoAmI:
        return WhoAmI.model_validate(self._request("GET", "/api/v1/whoami").json())

    def resolve(self, spec: str) -> ResolvedVersion:
        """Resolve ``[owner/]name[@specifier]`` to one version (yanked ones only when pinned with ``==``)."""
        return ResolvedVersion.model_validate(
            self._request("GET", "/api/v1/resolve", params={"spec": spec}).json()
        )

    def environment(self, owner: str, name: str) -> EnvironmentInfo:
        return EnvironmentInfo.model_validate(
            self._request("GET", f"/api/v1/environments/{owner}/{name}").json()
        )

    def search(
        self,
        q: str = "",
        *,
        tags: Iterable[str] = (),
        owner: str | None = None,
        sort: Literal["downloads", "stars", "updated", "name"] = "downloads",
        page: int = 1,
        per_page: int = 20,
    ) -> SearchResult:
        params: dict[str, Any] = {"q": q, "tag": list(tags), "sort": sort, "page": page, "per_page": per_page}
        if owner:
            params["owner"] = owner
        return SearchResult.model_validate(self._request("GET", "/api/v1/environments", params=params).json())

    def publish(
        self,
        owner: str,
        name: str,
        wheel: Path,
        sdist: Path,
        *,
        visibility: Literal["public", "private"] | None = None,
        content_hash: str | None = None,
    ) -> PublishedVersion:
        data: dict[str, str] = {}
        if visibility:
            data["visibility"] = visibility
        if content_hash:
            data["content_hash"] = content_hash
        with Path(wheel).open("rb") as w, Path(sdist).open("rb") as s:
            files = {
                "wheel": (Path(wheel).name, w, "application/octet-stream"),
                "sdist": (Path(sdist).name, s, "application/octet-stream"),
            }
            response = self._request(
                "POST", f"/api/v1/environments/{owner}/{name}/versions", data=data, files=files
            )
        return PublishedVersion.model_validate(response.json())

    def yank(self, owner: str, name: str, version: str, reason: str = "") -> VersionInfo:
        path = f"/api/v1/environments/{owner}/{name}/versions/{version}/yank"
        return VersionInfo.model_validate(self._request("POST", path, json={"reason": reason}).json())

    def unyank(self, owner: str, name: str, version: str) -> VersionInfo:
        path = f"/api/v1/environments/{owner}/{name}/versions/{version}/unyank"
        return VersionInfo.model_validate(self._request("POST", path).json())

    def upload_eval(
        self,
        owner: str,
        name: str,
        version: str,
        *,
        model: str,
        avg_reward: float,
        num_examples: int,
        rollouts_per_example: int,
        pass_at_k: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        body = {
            "model": model,
            "avg_reward": avg_reward,
            "num_examples": num_examples,
            "rollouts_per_example": rollouts_per_example,
            "pass_at_k": pass_at_k or {},
        }
        path = f"/api/v1/environments/{owner}/{name}/versions/{version}/evals"
        result: dict[str, Any] = self._request("POST", path, json=body).json()
        return result

    def download(self, file: HubFile, dest_dir: Path) -> Path:
        """Download ``file`` into ``dest_dir``, checking its sha256; returns the path."""
        dest_dir = Path(dest_dir)
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / Path(file.filename).name
        fd, tmp = tempfile.mkstemp(dir=dest_dir, prefix=".download-")
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, self._http.stream("GET", file.url) as response:
                if not response.is_success:
                    raise HubClientError(f"GET {file.url}: HTTP {response.status_code}", response.status_code)
                for chunk in response.iter_bytes():
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != file.sha256:
                raise HubClientError(
                    f"{file.filename}: sha256 mismatch (expected {file.sha256}, got {digest.hexdigest()})"
                )
            os.replace(tmp, target)
        except self._httpx.HTTPError as exc:
            raise HubClientError(f"cannot download {file.url}: {exc}") from None
        finally:
            Path(tmp).unlink(missing_ok=True)
        return target
