"""Bare environment names (``vf-install math-env``) on the hub: found, or one error that says where we looked.

A bare name is looked up locally first (a directory, ``./environments/<module>``, an installed
environment: the CLI's part), then on the configured hub, where distribution names are unique hub-wide,
so ``math-env`` means whichever owner published it. The environments bundled with the SDK are published
under one namespace, ``BUNDLED_NAMESPACE`` (``verifiers/math-env``, …; ``vf-hub serve --demo`` does it),
and install with the same hash pinning as any ``owner/name``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from verifiers._urls import redact_url
from verifiers.hub.client import HubClient, HubClientError
from verifiers.hub.errors import HubInstallError

#: The hub namespace the bundled environments (``environments/*`` of the SDK) are published under.
BUNDLED_NAMESPACE = "verifiers"


class EnvironmentNotFound(HubInstallError):
    """A bare name the hub does not have (or could not be asked about); ``looked_in`` is filled by the
    caller with the local places it searched before, so the message lists every place."""

    def __init__(self, name: str, hub_url: str, hub_answer: str, looked_in: Sequence[str] = ()) -> None:
        self.name, self.hub_url, self.hub_answer = name, hub_url, hub_answer
        self.looked_in = tuple(looked_in)
        super().__init__(self.message())

    def with_local_places(self, places: Sequence[str]) -> EnvironmentNotFound:
        return EnvironmentNotFound(self.name, self.hub_url, self.hub_answer, (*places, *self.looked_in))

    def message(self) -> str:
        where = "\n".join(
            f"  - {place}"
            for place in (*self.looked_in, f"the hub at {redact_url(self.hub_url)}: {self.hub_answer}")
        )
        return (
            f"no environment named {self.name!r} was found. Looked in:\n{where}\n"
            f"Give a path, an owner/name from the hub (the bundled environments are "
            f"{BUNDLED_NAMESPACE}/<name>), or point VF_HUB_URL / --hub-url at the hub that has it."
        )


def close_names(client: HubClient, name: str, owner: str | None = None) -> list[str]:
    """Environments this client may see whose names are close to ``name`` (``owner/name`` each), best
    first: the "did you mean" of a name the hub does not have. Empty when the hub cannot be searched."""
    found: dict[str, str] = {}
    try:
        pages = [client.search(name[: max(3, len(name) // 2)], per_page=50)]
        if owner:
            pages.append(client.search(owner=owner, per_page=50))
    except HubClientError:
        return []
    for page in pages:
        for item in page.items:
            found.setdefault(item.name, item.full_name)
    close = difflib.get_close_matches(name, list(found), n=3, cutoff=0.6)
    return [found[n] for n in close]


def did_you_mean(names: Sequence[str]) -> str:
    return f" (did you mean {' or '.join(names)}?)" if names else ""


def check_bare_name(client: HubClient, name: str) -> None:
    """Raise ``EnvironmentNotFound`` unless the hub has an environment called ``name`` (any owner).

    Only a missing name or an unreachable hub is turned into that error; a version specifier that no
    version matches, or a refused token, stays the resolver's own error."""
    try:
        client.resolve(name)
    except HubClientError as exc:
        if exc.status_code == 404:
            answer = "no such environment (or it is private and this token may not read it)"
            answer += did_you_mean(close_names(client, name))
            raise EnvironmentNotFound(name, client.url, answer) from None
        if exc.status_code is None:
            raise EnvironmentNotFound(name, client.url, f"could not be reached ({exc})") from None
        raise
