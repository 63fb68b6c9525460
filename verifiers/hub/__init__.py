"""Hub client side: the content hash and names (``packaging``), the wire schemas shared with the hub
service (``wire``), the API client (``client``), installing from a hub (``install``) and pushing a run
directory's results (``results``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "HubClient": "verifiers.hub.client",
    "HubConfig": "verifiers.hub.client",
    "HubInstallError": "verifiers.hub.errors",
    "InstallResult": "verifiers.hub.install",
    "install_from_hub": "verifiers.hub.install",
    "EnvSpec": "verifiers.hub.packaging",
    "content_hash_of_module": "verifiers.hub.packaging",
    "content_hash_of_sdist": "verifiers.hub.packaging",
    "content_hash_of_wheel": "verifiers.hub.packaging",
    "module_name": "verifiers.hub.packaging",
    "normalize_name": "verifiers.hub.packaging",
    "parse_env_spec": "verifiers.hub.packaging",
    "PushResult": "verifiers.hub.results",
    "push_run": "verifiers.hub.results",
    "HubClientError": "verifiers.hub.wire",
    "HubFile": "verifiers.hub.wire",
    "ResolvedVersion": "verifiers.hub.wire",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.hub.client import HubClient as HubClient, HubConfig as HubConfig
    from verifiers.hub.errors import HubInstallError as HubInstallError
    from verifiers.hub.install import InstallResult as InstallResult, install_from_hub as install_from_hub
    from verifiers.hub.packaging import (
        EnvSpec as EnvSpec,
        content_hash_of_module as content_hash_of_module,
        content_hash_of_sdist as content_hash_of_sdist,
        content_hash_of_wheel as content_hash_of_wheel,
        module_name as module_name,
        normalize_name as normalize_name,
        parse_env_spec as parse_env_spec,
    )
    from verifiers.hub.results import PushResult as PushResult, push_run as push_run
    from verifiers.hub.wire import (
        HubClientError as HubClientError,
        HubFile as HubFile,
        ResolvedVersion as ResolvedVersion,
    )
