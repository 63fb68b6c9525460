"""Typed client for the Environments Hub JSON API (resolve, search, publish, yank, download).

Configuration, most specific first:

- URL: the ``url`` argument, ``$VF_HUB_URL``, the config file, ``http://127.0.0.1:8080`` (``DEFAULT_URL``,
  the port ``vf-hub serve`` listens on by default: model servers usually take 8000);
- token: the ``token`` argument, ``$VF_HUB_TOKEN``, the config file — the file's token is only sent to
  the URL stored next to it, so pointing ``VF_HUB_URL`` elsewhere never leaks it.

The config file is written by ``vf-hub login``: ``<user config dir>/verifiers-hub/config.toml`` (or
``$VF_HUB_CONFIG``), mode 0600. The answer models, ``HubClientError`` and the config file code live in
``verifiers.hub.wire``, which the hub uses too; they are re-exported here.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote, urlsplit, urlunsplit

from verifiers._urls import redact_url
from verifiers.hub.wire import (
    ChunkReceipt,
    EnvironmentDetail,
    EvalRunCreate,
    EvalRunInfo,
    EvalRunPage,
    EvalRunUpdate,
    HubClientError,
    HubFile,
    Leaderboard,
    LeaderboardPick,
    ReadGrantInfo,
    ResolvedVersion,
    RolloutKeys,
    RolloutPage,
    RolloutRecord,
    SearchPage,
    SortKey,
    StoredRollout,
    VersionDetail,
    VersionInfo,
    Visibility,
    WhoAmI,
    clean_url,
    config_path,
    load_config_file,
    problem_detail,
    save_config,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_URL",
    "EnvironmentDetail",
    "EvalRunInfo",
    "HubClient",
    "HubClientError",
    "HubConfig",
    "HubFile",
    "ReadGrantInfo",
    "ResolvedVersion",
    "SearchPage",
    "VersionDetail",
    "VersionInfo",
    "WhoAmI",
    "config_path",
    "load_config_file",
    "save_config",
]

DEFAULT_URL = "http://127.0.0.1:8080"
#: Stands for the reader's own token in printed index URLs (never the token itself).
TOKEN_PLACEHOLDER = "<token>"


@dataclass(frozen=True)
class HubConfig:
    url: str
    token: str | None
    #: The hub URL a stored (``vf-hub login``) token belongs to, when it is not ``url``: that token is
    #: never sent here, and a missing-token error says so.
    stored_token_url: str | None = None

    @classmethod
    def load(cls, url: str | None = None, token: str | None = None) -> HubConfig:
        stored = load_config_file()
        chosen = clean_url(url or os.environ.get("VF_HUB_URL") or stored.get("url") or DEFAULT_URL)
        if token is None:
            token = os.environ.get("VF_HUB_TOKEN") or None
        other: str | None = None
        if stored.get("token"):
            stored_url = clean_url(stored.get("url", DEFAULT_URL))
            if stored_url == chosen:
                token = token or stored["token"]
            else:
                other = stored_url
        return cls(url=chosen, token=token, stored_token_url=other)

    def missing_token_message(self) -> str:
        """What to do when a command needs a token and there is none for ``url``."""
        how = "set VF_HUB_TOKEN, pass --token, or run `vf-hub login`"
        if self.stored_token_url is not None:
            return (
                f"no hub token for {redact_url(self.url)}: the stored token (vf-hub login) is for another "
                f"hub, {redact_url(self.stored_token_url)}, and is only sent there; {how} for "
                f"{redact_url(self.url)}, or point VF_HUB_URL (or --hub-url) at {redact_url(self.stored_token_url)}"
            )
        return f"no hub token for {redact_url(self.url)}: {how}"


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
            raise HubClientError(
                "the hub client needs httpx (a requirement of verifiers-sdk, missing here): pip install httpx"
            ) from None
        self._httpx = httpx
        cfg = HubConfig.load(url, token)
        self.config = cfg
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
            raise HubClientError(
                f"cannot reach the hub at {redact_url(self.url)}: {redact_url(exc)}"
            ) from None
        if response.is_success:
            return response
        detail = problem_detail(response.text)
        raise HubClientError(f"{method} {path}: HTTP {response.status_code}: {detail}", response.status_code)

    def require_token(self) -> str:
        """The token, or ``HubClientError`` saying how to get one (and naming a stored token that belongs
        to another hub URL)."""
        if not self.token:
            raise HubClientError(self.config.missing_token_message())
        return self.token

    # --- URLs ---
    def index_url(self, *, with_token: bool = False) -> str:
        """The simple index URL; with the token embedded in pip's ``__token__:<token>@`` form if asked."""
        if not (with_token and self.token):
            return f"{self.url}/simple/"
        return self.token_index_url(quote(self.token, safe=""))

    def token_index_url(self, token: str = TOKEN_PLACEHOLDER) -> str:
        """The simple index URL in pip's token form, ``http://__token__:<token>@HOST/simple/``: by default
        with the placeholder, what a command prints for the reader to fill in (private environments)."""
        parts = urlsplit(f"{self.url}/simple/")
        host = parts.netloc.rpartition("@")[2]  # credentials of the hub URL itself give way to the token
        return urlunsplit((parts.scheme, f"__token__:{token}@{host}", parts.path, "", ""))

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

    def environment(self, owner: str, name: str) -> EnvironmentDetail:
        return EnvironmentDetail.model_validate(
            self._request("GET", f"/api/v1/environments/{owner}/{name}").json()
        )

    def search(
        self,
        q: str = "",
        *,
        tags: Iterable[str] = (),
        owner: str | None = None,
        sort: SortKey = "downloads",
        page: int = 1,
        per_page: int = 20,
    ) -> SearchPage:
        """One page of the environments this client may see, filtered like the web UI's search."""
        params: dict[str, Any] = {"q": q, "tag": list(tags), "sort": sort, "page": page, "per_page": per_page}
        if owner:
            params["owner"] = owner
        return SearchPage.model_validate(self._request("GET", "/api/v1/environments", params=params).json())

    def publish(
        self,
        owner: str,
        name: str,
        wheel: Path,
        sdist: Path,
        *,
        visibility: Visibility | None = None,
        content_hash: str | None = None,
    ) -> VersionDetail:
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
        return VersionDetail.model_validate(response.json())

    def yank(self, owner: str, name: str, version: str, reason: str = "") -> VersionInfo:
        """Take a version out of resolution (still downloadable, and installable when pinned with ``==``)."""
        path = f"/api/v1/environments/{owner}/{name}/versions/{version}/yank"
        return VersionInfo.model_validate(self._request("POST", path, json={"reason": reason}).json())

    def unyank(self, owner: str, name: str, version: str) -> VersionInfo:
        path = f"/api/v1/environments/{owner}/{name}/versions/{version}/unyank"
        return VersionInfo.model_validate(self._request("POST", path).json())

    # --- who may read an environment ---
    def set_visibility(self, owner: str, name: str, visibility: Visibility) -> EnvironmentDetail:
        """Make an environment public or private (owners and admins of its namespace)."""
        path = f"/api/v1/environments/{owner}/{name}"
        return EnvironmentDetail.model_validate(
            self._request("PATCH", path, json={"visibility": visibility}).json()
        )

    def grants(self, owner: str, name: str) -> list[ReadGrantInfo]:
        """The users the environment is shared with."""
        answer = self._request("GET", f"/api/v1/environments/{owner}/{name}/grants").json()
        return [ReadGrantInfo.model_validate(g) for g in answer]

    def share(self, owner: str, name: str, username: str) -> ReadGrantInfo:
        """Let ``username`` read (and install) the environment while it is private."""
        path = f"/api/v1/environments/{owner}/{name}/grants/{username}"
        return ReadGrantInfo.model_validate(self._request("PUT", path).json())

    def unshare(self, owner: str, name: str, username: str) -> None:
        """Revoke ``username``'s read grant (the hub refuses it from the next request on)."""
        self._request("DELETE", f"/api/v1/environments/{owner}/{name}/grants/{username}")

    # --- eval runs ---
    def create_run(self, owner: str, name: str, body: EvalRunCreate) -> EvalRunInfo:
        """Start uploading a run (or get the run already uploaded under ``body.run_key``)."""
        path = f"/api/v1/environments/{owner}/{name}/runs"
        # `shuffle` only when set, so hubs from before the field still take unshuffled runs
        sent = body.model_dump(mode="json", exclude=None if body.shuffle else {"shuffle"})
        return EvalRunInfo.model_validate(self._request("POST", path, json=sent).json())

    def upload_rollouts(self, run_id: int, rollouts: Iterable[RolloutRecord]) -> ChunkReceipt:
        """One chunk (at most ``wire.CHUNK_LIMIT`` rollouts, under 1 MiB); resending one is harmless."""
        body = {"rollouts": [r.model_dump(mode="json") for r in rollouts]}
        return ChunkReceipt.model_validate(
            self._request("POST", f"/api/v1/runs/{run_id}/rollouts", json=body).json()
        )

    def rollout_keys(self, run_id: int) -> list[tuple[int, int]]:
        """The (example_id, rollout_index) pairs the hub already holds for the run."""
        return RolloutKeys.model_validate(
            self._request("GET", f"/api/v1/runs/{run_id}/rollout-keys").json()
        ).keys

    def finalize_run(self, run_id: int) -> EvalRunInfo:
        return EvalRunInfo.model_validate(self._request("POST", f"/api/v1/runs/{run_id}/finalize").json())

    def set_run_visibility(self, run_id: int, visibility: Visibility) -> EvalRunInfo:
        """Make an uploaded run public (on the leaderboard) or private again."""
        body = EvalRunUpdate(visibility=visibility).model_dump(mode="json")
        return EvalRunInfo.model_validate(self._request("PATCH", f"/api/v1/runs/{run_id}", json=body).json())

    def run(self, run_id: int) -> EvalRunInfo:
        return EvalRunInfo.model_validate(self._request("GET", f"/api/v1/runs/{run_id}").json())

    def runs(
        self,
        owner: str,
        name: str,
        *,
        version: str | None = None,
        model: str | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> EvalRunPage:
        params: dict[str, Any] = {"page": page, "per_page": per_page}
        if version:
            params["version"] = version
        if model:
            params["model"] = model
        path = f"/api/v1/environments/{owner}/{name}/runs"
        return EvalRunPage.model_validate(self._request("GET", path, params=params).json())

    def rollouts(
        self,
        run_id: int,
        *,
        min_reward: float | None = None,
        max_reward: float | None = None,
        error: str | None = None,
        example_id: int | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> RolloutPage:
        """One page of a run's rollouts; ``error`` is a category, ``any`` or ``none``."""
        given = {"min_reward": min_reward, "max_reward": max_reward, "error": error, "example_id": example_id}
        params: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        params.update(page=page, per_page=per_page)
        return RolloutPage.model_validate(
            self._request("GET", f"/api/v1/runs/{run_id}/rollouts", params=params).json()
        )

    def rollout(self, run_id: int, example_id: int, rollout_index: int) -> StoredRollout:
        path = f"/api/v1/runs/{run_id}/rollouts/{example_id}/{rollout_index}"
        return StoredRollout.model_validate(self._request("GET", path).json())

    def leaderboard(self, owner: str, name: str, *, pick: LeaderboardPick = "best") -> Leaderboard:
        """Per (model, version): the best (or latest) complete public run."""
        path = f"/api/v1/environments/{owner}/{name}/leaderboard"
        return Leaderboard.model_validate(self._request("GET", path, params={"pick": pick}).json())

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
                    detail = problem_detail(response.read().decode(errors="replace"))
                    raise HubClientError(
                        f"GET {redact_url(file.url)}: HTTP {response.status_code}: {detail}",
                        response.status_code,
                    )
                for chunk in response.iter_bytes():
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != file.sha256:
                raise HubClientError(
                    f"{file.filename}: sha256 mismatch (expected {file.sha256}, got {digest.hexdigest()})"
                )
            os.replace(tmp, target)
        except self._httpx.HTTPError as exc:
            raise HubClientError(f"cannot download {redact_url(file.url)}: {redact_url(exc)}") from None
        finally:
            Path(tmp).unlink(missing_ok=True)
        return target
