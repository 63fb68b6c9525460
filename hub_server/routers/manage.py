"""Web pages where a namespace is managed: an environment's settings (visibility, read grants) and an
organisation's members (``auth``'s matrix decides who may do what; the services check it).

Plain server-rendered forms that work without JavaScript, each with the session's CSRF token
(``pages.form_principal``); a refusal renders the page again with the hub's one-line reason, a change
redirects back to it (303). Included before ``web.router``, whose ``/{owner}/{name}`` pattern would
otherwise take these paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from hub_server import csrf, schemas, services
from hub_server.auth import ROLES, Principal
from hub_server.context import Hub
from hub_server.deps import HubDep, PrincipalDep
from hub_server.routers.pages import form_principal
from hub_server.routers.web import index_url, render_page
from hub_server.services import members, sharing
from hub_server.services.environments import check_manage

router = APIRouter(include_in_schema=False)

Token = Annotated[str, Form(alias=csrf.FIELD, max_length=100)]
Username = Annotated[str, Path(min_length=1, max_length=64)]


def _settings_url(owner: str, name: str) -> str:
    return f"/{owner.lower()}/{name}/settings"


def _acted(
    change: Callable[[], object], refused: Callable[[services.HubError], Response], done: str
) -> Response:
    """A form's change made: back to its page (303); refused: the page again, with the hub's reason."""
    try:
        change()
    except services.HubError as exc:
        return refused(exc)
    return RedirectResponse(done, status_code=303)


def _refusal(
    page: Callable[..., HTMLResponse], *args: Any, **extra: Any
) -> Callable[[services.HubError], Response]:
    return lambda exc: page(*args, form_error=exc.detail, status_code=exc.status_code, **extra)


def _settings(
    request: Request, hub: Hub, principal: Principal, owner: str, name: str, **extra: Any
) -> HTMLResponse:
    status = extra.pop("status_code", 200)
    with hub.db.read() as session:
        env = services.get_environment(session, principal, owner, name)  # 404 unless visible
        check_manage(principal, env, "change the settings of")
        grants = sharing.list_grants(session, principal, owner, name)
        return render_page(
            request,
            "settings.html",
            status_code=status,
            env=env,
            grants=grants,
            install_pip=f"pip install --index-url {index_url(request, 'private')} {env.name}",
            principal=principal,
            **{"form_error": None, **extra},
        )


@router.get("/{owner}/{name}/settings", response_model=None)
def settings_page(request: Request, hub: HubDep, principal: PrincipalDep, owner: str, name: str) -> Response:
    if principal is None:
        return RedirectResponse("/login", status_code=303)
    return _settings(request, hub, principal, owner, name)


@router.post("/{owner}/{name}/settings/visibility", response_model=None)
def visibility_form(
    request: Request,
    hub: HubDep,
    owner: str,
    name: str,
    visibility: Annotated[Literal["public", "private"], Form()],
    token: Token = "",
) -> Response:
    principal = form_principal(request, hub, token)
    body = schemas.EnvironmentUpdate(visibility=visibility)
    return _acted(
        lambda: services.update_environment(hub, principal, owner, name, body),
        _refusal(_settings, request, hub, principal, owner, name),
        _settings_url(owner, name),
    )


@router.post("/{owner}/{name}/settings/grants", response_model=None)
def share_form(
    request: Request,
    hub: HubDep,
    owner: str,
    name: str,
    username: Annotated[str, Form(max_length=64)],
    token: Token = "",
) -> Response:
    principal = form_principal(request, hub, token)
    return _acted(
        lambda: sharing.share(hub, principal, owner, name, username.strip()),
        _refusal(_settings, request, hub, principal, owner, name, username=username),
        _settings_url(owner, name),
    )


@router.post("/{owner}/{name}/settings/grants/{username}/remove", response_model=None)
def unshare_form(
    request: Request, hub: HubDep, owner: str, name: str, username: Username, token: Token = ""
) -> Response:
    principal = form_principal(request, hub, token)
    return _acted(
        lambda: sharing.unshare(hub, principal, owner, name, username),
        _refusal(_settings, request, hub, principal, owner, name),
        _settings_url(owner, name),
    )


# --- an organisation's members ---------------------------------------------------------------------------
def _members_url(org: str) -> str:
    return f"/account/orgs/{org.lower()}"


def _members(request: Request, hub: Hub, principal: Principal, org: str, **extra: Any) -> HTMLResponse:
    status = extra.pop("status_code", 200)
    with hub.db.read() as session:
        listed = members.list_members(session, principal, org)  # 404 absent, 403 for non-members
    mine = next((m.role for m in listed if m.username == principal.username), None)
    role = "owner" if principal.has("admin") else mine
    return render_page(
        request,
        "org_members.html",
        status_code=status,
        org=org.lower(),
        members=listed,
        my_role=mine,
        manages=principal.has("publish") and role in ("owner", "admin"),
        owns=principal.has("publish") and role == "owner",
        roles=ROLES,
        principal=principal,
        **{"form_error": None, **extra},
    )


@router.get("/account/orgs/{org}", response_model=None)
def members_page(request: Request, hub: HubDep, principal: PrincipalDep, org: Username) -> Response:
    if principal is None:
        return RedirectResponse("/login", status_code=303)
    return _members(request, hub, principal, org)


@router.post("/account/orgs/{org}/members", response_model=None)
def add_member_form(
    request: Request,
    hub: HubDep,
    org: Username,
    username: Annotated[str, Form(max_length=64)],
    role: Annotated[str, Form(max_length=16)] = "member",
    token: Token = "",
) -> Response:
    principal = form_principal(request, hub, token)
    return _acted(
        lambda: members.add_member(hub, org, username.strip(), role, actor=principal),
        _refusal(_members, request, hub, principal, org),
        _members_url(org),
    )


@router.post("/account/orgs/{org}/members/{username}/role", response_model=None)
def role_form(
    request: Request,
    hub: HubDep,
    org: Username,
    username: Username,
    role: Annotated[str, Form(max_length=16)],
    token: Token = "",
) -> Response:
    principal = form_principal(request, hub, token)
    return _acted(
        lambda: members.set_role(hub, org, username, role, actor=principal),
        _refusal(_members, request, hub, principal, org),
        _members_url(org),
    )


@router.post("/account/orgs/{org}/members/{username}/remove", response_model=None)
def remove_member_form(
    request: Request, hub: HubDep, org: Username, username: Username, token: Token = ""
) -> Response:
    principal = form_principal(request, hub, token)
    # having left the organisation, its page is no longer theirs: back to the account page
    left = username.lower() == principal.username
    return _acted(
        lambda: members.remove_member(hub, org, username, actor=principal),
        _refusal(_members, request, hub, principal, org),
        "/account" if left else _members_url(org),
    )
