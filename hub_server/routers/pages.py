"""Web pages beyond browsing: the account (tokens, own and shared environments, organisations, stars), a
version's source files and the offline API reference.

Forms that act with the session cookie carry a CSRF token (``hub_server.csrf``); the cookie alone never
authorises a write (``deps.request_token`` ignores it on POST). Included before ``web.router``, whose
``/{owner}`` pattern would otherwise take ``/account`` and ``/docs``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from hub_server import csrf, schemas, services, source_view
from hub_server.auth import COOKIE_NAME, SCOPES, AuthError, Principal
from hub_server.context import Hub
from hub_server.deps import HubDep, PrincipalDep, SessionDep
from hub_server.routers.web import render_error, render_page, set_session_cookie
from hub_server.services import account_view, members, runs

router = APIRouter(include_in_schema=False)

_EXPIRY_DAYS = (0, 7, 30, 90, 365)
#: Names sign-up never hands out: the bundled environments' namespace (``vf-install math-env`` resolves
#: there; an admin creates it, as ``vf-hub serve --demo`` does).
SIGNUP_RESERVED = frozenset({"verifiers"})


def _account(request: Request, hub: Hub, principal: Principal, **extra: Any) -> HTMLResponse:
    with hub.db.read() as session:
        tokens = services.list_tokens(session, principal.user_id)
        own = account_view.own_environments(session, principal)
        shared = account_view.shared_environments(session, principal)
        starred = account_view.starred_environments(session, principal)
        orgs = members.organisations_of(session, principal)
    return render_page(
        request,
        "account.html",
        principal=principal,
        tokens=list(reversed(tokens)),
        own=own,
        shared=shared,
        starred=starred,
        orgs=orgs,
        scopes=[s for s in SCOPES if principal.has(s)],
        expiry_days=_EXPIRY_DAYS,
        **{"new_token": None, "form_error": None, **extra},
    )


@router.get("/account", response_model=None)
def account_page(request: Request, hub: HubDep, principal: PrincipalDep) -> Response:
    if principal is None:
        return RedirectResponse("/login", status_code=303)
    return _account(request, hub, principal)


def form_principal(request: Request, hub: Hub, submitted: str) -> Principal:
    session_id = csrf.session_token(request, submitted)
    if session_id is None:
        raise services.HubError(403, "send this form from the hub's own page while logged in (CSRF check)")
    try:
        return hub.web_principal(session_id)
    except AuthError as exc:
        raise services.HubError(401, str(exc)) from None


@router.post("/login/signup", response_model=None)
def signup_form(
    request: Request,
    hub: HubDep,
    username: Annotated[str, Form(max_length=64)],
    token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
) -> Response:
    """First-token sign-up, where the hub allows it (``VF_HUB_OPEN_SIGNUP``): a new user, its namespace and
    one publish token, shown once on the account page the browser is now signed in to."""
    if not hub.settings.open_signup:
        return render_error(
            request, 404, "this hub does not take sign-ups: ask its admin for a user and token"
        )
    if not csrf.login_ok(request, token):  # the login form's double-submit token, and the origin
        return render_error(
            request, 403, "sign-up refused: use the hub's own login page (reload it and try again)"
        )
    name = username.strip().lower()
    try:
        if name in SIGNUP_RESERVED:
            raise services.HubError(409, f"the name {name!r} is reserved on this hub")
        services.create_user(hub, name)
        secret, _row = services.create_token(hub, name, scopes=["publish"], name="first token (web sign-up)")
    except services.HubError as exc:
        return render_page(
            request,
            "login.html",
            status_code=exc.status_code,
            principal=None,
            error=None,
            signup=True,
            signup_error=exc.detail,
            username=username,
            login_csrf=token,
        )
    principal = hub.principal(secret)
    response = _account(request, hub, principal, new_token=secret)
    response.headers["Cache-Control"] = "no-store"  # the page shows a secret once
    set_session_cookie(request, response, hub, principal.token_id)
    return response


@router.post("/account/tokens", response_model=None)
def create_token_form(
    request: Request,
    hub: HubDep,
    token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
    name: Annotated[str, Form(max_length=100)] = "",
    scope: Annotated[str, Form(max_length=20)] = "read",
    expires_days: Annotated[int, Form(ge=0, le=3650)] = 30,
) -> Response:
    principal = form_principal(request, hub, token)
    try:
        secret, _row = services.create_token(
            hub,
            principal.username,
            scopes=[scope],
            name=name.strip(),
            expires_in=timedelta(days=expires_days) if expires_days else None,
            creator=principal,
        )
    except services.HubError as exc:
        return _account(request, hub, principal, form_error=exc.detail)
    response = _account(request, hub, principal, new_token=secret)
    response.headers["Cache-Control"] = "no-store"  # the page shows a secret once
    return response


@router.post("/account/tokens/{token_id}/revoke", response_model=None)
def revoke_token_form(
    request: Request,
    hub: HubDep,
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
) -> Response:
    principal = form_principal(request, hub, token)
    services.revoke_token(hub, token_id, principal=principal)
    try:  # revoking the session's own token (or one it was minted from) ends the session
        hub.web_principal(request.cookies.get(COOKIE_NAME, ""))
    except AuthError:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE_NAME)
        return response
    return RedirectResponse("/account", status_code=303)


@router.post("/{owner}/{name}/star", response_model=None)
def star_form(
    request: Request,
    hub: HubDep,
    owner: str,
    name: str,
    token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
    starred: Annotated[bool, Form()] = True,
) -> Response:
    principal = form_principal(request, hub, token)
    services.set_star(hub, principal, owner, name, starred)  # 404 unless visible
    return RedirectResponse(f"/{owner}/{name}", status_code=303)


@router.post("/{owner}/{name}/evals/{run_id}/visibility", response_model=None)
def run_visibility_form(
    request: Request,
    hub: HubDep,
    owner: str,
    name: str,
    run_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    visibility: Annotated[Literal["public", "private"], Form()],
    token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
) -> Response:
    principal = form_principal(request, hub, token)
    run = runs.set_visibility(
        hub, principal, run_id, visibility
    )  # 404 unless visible, 403 unless a publisher
    return RedirectResponse(run.url, status_code=303)


@router.get("/docs", response_class=HTMLResponse)
def api_docs(request: Request, principal: PrincipalDep) -> HTMLResponse:
    """The API reference rendered from the OpenAPI schema on the server: no CDN scripts, works offline."""
    schema = request.app.openapi()
    operations = []
    for path, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            if method.startswith("x-") or not isinstance(op, dict):
                continue
            body = op.get("requestBody", {}).get("content", {})
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "tag": (op.get("tags") or ["other"])[0],
                    "parameters": op.get("parameters", []),
                    "body": sorted(body),
                    "responses": sorted(op.get("responses", {}).items()),
                    "anchor": f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", ""),
                }
            )
    return render_page(
        request,
        "api_docs.html",
        info=schema.get("info", {}),
        operations=operations,
        principal=principal,
    )


@router.get("/{owner}/{name}/source/{version}/{path:path}", response_class=HTMLResponse)
def source_page(
    request: Request,
    hub: HubDep,
    owner: str,
    name: str,
    version: str,
    path: str,
    session: SessionDep,
    principal: PrincipalDep,
) -> HTMLResponse:
    env = services.get_environment(session, principal, owner, name)  # 404 unless visible
    row = services.get_version(env, version)
    listed = {str(f["path"]): int(f["size"]) for f in row.sdist_files}
    sdist = next((f for f in row.files if f.kind == "sdist"), None)
    if path not in listed or sdist is None:
        return render_error(request, 404, f"{path} is not a file of {env.full_name} {row.version}'s sdist")
    with hub.blobs.open(sdist.blob_key) as archive:
        found = source_view.read_member(archive, path)
    if found is None:
        return render_error(request, 404, f"{path} is not in the stored sdist")
    data, size = found
    return render_page(
        request,
        "source.html",
        env=env,
        version=row,
        file=source_view.render_source(path, data, size),
        files=sorted(listed.items()),
        download=schemas.file_out(env, sdist).url,
        principal=principal,
    )
