"""Who may take a distribution name on the hub: dependency confusion in reverse.

The hub's ``/simple/`` answers a name it owns itself and relays every other name from its upstream index
(PyPI), so whoever first publishes a name here decides what ``pip install --index-url HUB/simple/ x``
installs for everyone, dependencies included. The rules, after PyPI's and devpi's:

- **reserved** (never publishable): the SDK the hub serves (``verifiers-sdk``) and the SDK's whole
  dependency closure, every extra included (``openai``, ``httpx``, ``sympy``, ``tabulate``, …), as
  installed with the hub. An environment that depends on the SDK pulls these through the hub's index;
- **a first publish of a name the upstream index serves is refused** (like PyPI, where a name belongs to
  whoever registered it, and like devpi, whose indexes do not mix a private name with a mirrored one unless
  an admin puts it on ``mirror_whitelist``): publishing it would shadow the public project for everyone
  who installs through the hub. An admin can set a name aside for one owner (``vf-hub name allow NAME
  --owner O``): only that owner may then publish it first, whether the upstream serves it or not; an
  upstream that cannot be asked is a 503, never a silent pass;
- a name already on the hub stays its owner's (``publishing``); later versions are not looked up again;
- **a name held by another owner** — a published environment, public or private, or an admin's
  allowance — **is refused with one answer** (``name_taken``), the same status, text and queries
  whatever holds it: the publisher learns that the name is not theirs to take, which one flat index
  cannot hide, but never whether a private environment has it (every read path answers 404 for that
  environment, as for an absent one).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlalchemy import Integer, delete, literal, select, union_all
from sqlalchemy.orm import Session

from hub_server.context import Hub
from hub_server.models import Environment, NameGrant, Owner, utcnow
from hub_server.sdk_dist import SDK_NAME
from hub_server.services.accounts import RESERVED_DISTRIBUTIONS
from hub_server.services.errors import HubError
from hub_server.services.lookups import get_owner
from hub_server.upstream import UpstreamError, redact
from verifiers.hub.packaging import normalize_name, requirement_closure


@functools.cache
def sdk_dependencies() -> frozenset[str]:
    """Every distribution name an install of the SDK could ask an index for (all extras, any platform),
    followed through what is installed here; computed once per process, on first use."""
    return frozenset(requirement_closure(SDK_NAME, every_extra=True)) - {SDK_NAME}


def check_reserved(name: str) -> None:
    """409 for a name nobody may publish (the SDK and its dependency closure), saying why."""
    canonical = normalize_name(name)
    if canonical in RESERVED_DISTRIBUTIONS:
        raise HubError(
            409,
            f"the distribution name {canonical!r} is reserved: the hub serves this package itself (it is the "
            "SDK the hub runs), so no environment may be published under it; rename your package",
        )
    if canonical in sdk_dependencies():
        raise HubError(
            409,
            f"the distribution name {canonical!r} is reserved: it is a dependency of {SDK_NAME}, which every "
            "environment installs through the hub's index, so publishing it here would replace it for "
            "everyone; rename your package (e.g. prefix it with your namespace)",
        )


@dataclass(frozen=True, slots=True)
class NameHolder:
    """Who holds a distribution name on the hub: the owner of its environment, else of an allowance."""

    owner_id: int | None
    published: bool


def name_holder(session: Session, name: str) -> NameHolder:
    """One query for both kinds of holder, so a name held by a private environment and one held by an
    allowance cost the same."""
    canonical = normalize_name(name)
    rows = session.execute(
        union_all(
            select(Environment.owner_id, literal(1, Integer)).where(Environment.name == canonical),
            select(NameGrant.owner_id, literal(0, Integer)).where(NameGrant.name == canonical),
        )
    ).all()
    owner_id, published = max(rows, key=lambda r: r[1], default=(None, 0))
    return NameHolder(owner_id, bool(published))


def name_taken(name: str) -> HubError:
    """The one refusal of a name another owner holds, whatever holds it (see the module's docstring)."""
    return HubError(
        409,
        f"the distribution name {normalize_name(name)!r} belongs to another owner on this hub (an "
        "environment, public or private, or a name an admin set aside for them); distribution names are "
        "unique across the hub, so rename your package (e.g. prefix it with your namespace)",
    )


def check_holder(holder: NameHolder, name: str, owner: Owner) -> None:
    if holder.owner_id is not None and holder.owner_id != owner.id:
        raise name_taken(name)


def check_first_publish(hub: Hub, name: str, owner: Owner, *, allowed: bool) -> None:
    """For a name not yet on the hub (``allowed``: an admin set it aside for ``owner``): 409 if the
    upstream index serves it and it is not allowed; 503 if the upstream cannot be asked. Blocking (one
    upstream request, cached)."""
    canonical = normalize_name(name)
    if allowed:
        return
    if hub.upstream is None:  # no fall-through: the hub's index cannot shadow anything
        return
    where = redact(hub.upstream.base_url)
    try:
        listed = hub.upstream.serves(canonical)
    except UpstreamError as exc:
        raise HubError(
            503,
            f"cannot check whether the upstream index serves {canonical!r} ({exc}); a first publish of a name "
            "waits until it can be checked: try again later",
        ) from None
    if listed:
        raise HubError(
            409,
            f"{canonical!r} is a project on the hub's upstream index ({where}); publishing it here would shadow "
            "it for everyone who installs through the hub (dependency confusion), so rename your package "
            f"(e.g. prefix it with your namespace), or ask a hub admin to allow it: "
            f"`vf-hub name allow {canonical} --owner {owner.name}`",
        )


def allow_name(hub: Hub, name: str, owner: str) -> str:
    """Set ``name`` aside for ``owner``: only it may publish the name first, although the upstream serves
    it (admins, ``vf-hub name allow``). Reserved names cannot be allowed. Returns the normalised name."""
    canonical = normalize_name(name)
    check_reserved(canonical)
    with hub.db.write() as session:
        owner_row = get_owner(session, owner)
        grant = session.get(NameGrant, canonical)
        if grant is None:
            session.add(NameGrant(name=canonical, owner_id=owner_row.id, created_at=utcnow()))
        else:
            grant.owner_id, grant.created_at = owner_row.id, utcnow()
    return canonical


def revoke_name(hub: Hub, name: str) -> bool:
    """Withdraw an allowance (a name already published stays its owner's). False if there was none."""
    with hub.db.write() as session:
        result = session.execute(delete(NameGrant).where(NameGrant.name == normalize_name(name)))
        return bool(result.rowcount)  # type: ignore[attr-defined]


def allowed_names(hub: Hub) -> list[tuple[str, str]]:
    """(name, owner) of every allowance, by name."""
    with hub.db.read() as session:
        rows = session.execute(
            select(NameGrant.name, Owner.name)
            .join(Owner, Owner.id == NameGrant.owner_id)
            .order_by(NameGrant.name)
        )
        return [(n, o) for n, o in rows]
