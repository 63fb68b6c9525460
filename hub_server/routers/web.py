"""Server-rendered web UI (Jinja2). Read-only except for logging in and out.

Private environments are visible with a token in the Authorization header or the session cookie set by
``/login``; the cookie is honoured on GET/HEAD only (see ``deps.request_token``), so no page can be
driven into a state change from another site. The cookie holds a web session id, one per sign-in
(``services.web_sessions``), never the API token that signed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from packaging.version import Version as PEP440Version

from hub_server import csrf, eval_view, leaderboard_chart, schemas, services
from hub_server.auth import COOKIE_NAME, AuthError
from hub_server.context import Hub
from hub_server.deps import HubDep, PrincipalDep, SessionDep
from hub_server.releases import latest_version, sorted_versions
from hub_server.services import account_view, runs
from hub_server.services.catalogue import popular_tags
from hub_server.services.environments import readme_html
from verifiers.hub import wire
from verifiers.hub.packaging import normalize_name

router = APIRouter(include_in_schema=False)

# Scripts only from the hub itself (static/copy.js: the copy buttons); never inline, never from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def _base_url(request: Request) -> str:
    configured = request.app.state.hub.settings.base_url
    return (configured or str(request.base_url)).rstrip("/")


def _render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    templates = request.app.state.templates
    response: HTMLResponse = templates.TemplateResponse(
        request,
        template,
        {"base_url": _base_url(request), "csrf": csrf.token_for(request), **context},
        status_code=status_code,
    )
    response.headers.update(SECURITY_HEADERS)
    return response


def render_page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A page with the hub's security headers and CSRF token in its context (for the other page routers)."""
    return _render(request, template, status_code, **context)


def render_error(request: Request, status_code: int, detail: str) -> HTMLResponse:
    return _render(request, "error.html", status_code=status_code, code=status_code, detail=detail)


@router.get("/", response_class=HTMLResponse)
def index(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    q: Annotated[str, Query(max_length=200)] = "",
    tag: Annotated[str, Query(max_length=50)] = "",
    owner: Annotated[str, Query(max_length=64)] = "",
    sort: Annotated[str, Query(pattern="^(downloads|stars|updated|name)$")] = "downloads",
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> HTMLResponse:
    results = services.search(
        session,
        principal,
        q=q,
        tags=[tag] if tag else [],
        owner=owner or None,
        sort=sort,
        page=page,
        per_page=20,
    )
    params = {k: v for k, v in {"q": q, "tag": tag, "owner": owner, "sort": sort}.items() if v}
    pages = max(1, -(-results.total // results.per_page))
    return _render(
        request,
        "index.html",
        results=results,
        q=q,
        tag=tag,
        owner=owner,
        sort=sort,
        page=page,
        pages=pages,
        prev_url=f"/?{urlencode({**params, 'page': page - 1})}" if page > 1 else None,
        next_url=f"/?{urlencode({**params, 'page': page + 1})}" if page < pages else None,
        popular_tags=[
            (t, n, "/?" + urlencode({k: v for k, v in {**params, "tag": "" if t == tag else t}.items() if v}))
            for t, n in popular_tags(session, principal)
        ],
        filtered=bool(q or tag or owner),
        principal=principal,
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, principal: PrincipalDep) -> HTMLResponse:
    token = csrf.login_token(request)
    response = _render(
        request,
        "login.html",
        principal=principal,
        error=None,
        login_csrf=token,
        signup=request.app.state.hub.settings.open_signup,
    )
    response.set_cookie(
        csrf.LOGIN_COOKIE, token, max_age=3600, path="/login", httponly=True, samesite="strict"
    )
    return response


@router.post("/login", response_model=None)
def login(
    request: Request,
    hub: HubDep,
    token: Annotated[str, Form(max_length=200)],
    form_token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "",
) -> Response:
    if not csrf.login_ok(request, form_token):  # also checks the origin
        return render_error(
            request, 403, "login refused: use the hub's own login page (reload it and try again)"
        )
    try:
        principal = hub.principal(token.strip())
    except AuthError as exc:
        return _render(
            request,
            "login.html",
            status_code=401,
            principal=None,
            error=str(exc),
            login_csrf=form_token,
            signup=hub.settings.open_signup,
        )
    response = RedirectResponse("/", status_code=303)
    set_session_cookie(request, response, hub, principal.token_id)
    return response


def set_session_cookie(request: Request, response: Response, hub: Hub, token_id: int) -> None:
    """Sign the browser in with the API token ``token_id``: a new web session (ending the one this browser
    had, if any), its id in an HTTP-only cookie that lives no longer than the session."""
    started = services.start_session(hub, token_id)
    previous = csrf.session_cookie(request)
    if previous:  # the login forms are CSRF-checked by the caller, so this cookie came with this browser
        services.end_session(hub, previous)
    max_age = max(0, int((started.expires_at - datetime.now(UTC)).total_seconds()))
    response.set_cookie(
        COOKIE_NAME,
        started.session_id,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=hub.settings.cookie_secure,
    )


@router.post("/logout", response_model=None)
def logout(
    request: Request, hub: HubDep, token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = ""
) -> Response:
    session_id = csrf.session_cookie(request)
    if session_id and csrf.session_token(request, token) is None:
        return render_error(request, 403, "log out from the hub's own page (its CSRF token did not match)")
    if session_id:
        services.end_session(hub, session_id)  # the cookie, replayed, signs nobody in any more
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE_NAME)
    return response


@router.get("/{owner}", response_class=HTMLResponse)
def owner_page(owner: str) -> Response:
    return RedirectResponse(f"/?{urlencode({'owner': owner})}", status_code=307)


def index_url(request: Request, visibility: str) -> str:
    """The index URL an install command shows: pip's token form for a private environment (pip reaches
    it only with a token), the token itself left for the reader."""
    base = _base_url(request)
    if visibility == "private":
        scheme, _, rest = base.partition("://")
        return f"{scheme}://__token__:<token>@{rest}/simple/"
    return f"{base}/simple/"


def _is_newer(candidate: str, than: str) -> bool:
    return PEP440Version(candidate) > PEP440Version(than)


@router.get("/{owner}/{name}", response_class=HTMLResponse)
def environment_page(
    request: Request,
    owner: str,
    name: str,
    session: SessionDep,
    principal: PrincipalDep,
    version: Annotated[str | None, Query(max_length=100)] = None,
) -> HTMLResponse:
    env = services.get_environment(session, principal, owner, name)  # a HubError renders as error.html
    newest = latest_version(env)
    current = services.get_version(env, version) if version else newest
    board = runs.leaderboard(session, env)
    return _render(
        request,
        "environment.html",
        env=env,
        summary=schemas.env_summary(env),
        versions=sorted_versions(env),
        current=current,
        files=[schemas.file_out(env, f) for f in current.files] if current else [],
        readme=readme_html(request.app.state.hub, current) if current else "",  # stored at publish
        evals=services.list_evals(session, env),
        board=board,
        starred=account_view.has_starred(session, principal, env.id),
        all_runs=runs.list_runs(session, principal, env, per_page=50),
        chart=leaderboard_chart.reward_chart_svg(board.entries),
        ranking=wire.LEADERBOARD_RANKING,
        newer=newest if newest and current and _is_newer(newest.version, current.version) else None,
        install_vf=f"vf-install {env.full_name}" + (f"@=={current.version}" if current and version else ""),
        install_pip=f"pip install --index-url {index_url(request, env.visibility)} {env.name}"
        + (f"=={current.version}" if current and version else ""),
        principal=principal,
        can_manage=principal is not None and principal.can_manage(env.owner_id),
    )


ErrorFilter = Literal["", "none", "any", "model", "infra", "env", "scoring"]


@dataclass(frozen=True)
class RolloutFilters:
    """The rollout table's filters, as the eval page's form sends them (empty fields mean no filter)."""

    min_reward: float | None
    max_reward: float | None
    error: str | None
    example_id: int | None
    page: int

    def query(self, **change: Any) -> str:
        values = {**self.__dict__, **change}
        return urlencode(
            {k: v for k, v in values.items() if v not in (None, "") and not (k == "page" and v == 1)}
        )


def _number(text: str, name: str, kind: type[float] | type[int]) -> Any:
    if not text.strip():
        return None
    try:
        value = kind(text)
    except ValueError:
        raise services.HubError(422, f"{name} must be a number") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise services.HubError(422, f"{name} must be a finite number")
    return value


def rollout_filters(
    min_reward: str, max_reward: str, error: str, example_id: str, page: int
) -> RolloutFilters:
    example = _number(example_id, "example", int)
    if example is not None and not 0 <= example < 2**31:
        raise services.HubError(422, "example must be a non-negative integer")
    return RolloutFilters(
        _number(min_reward, "min reward", float),
        _number(max_reward, "max reward", float),
        error or None,
        example,
        page,
    )


def eval_page_context(
    run: wire.EvalRunInfo,
    records: list[dict[str, Any]],
    rollouts: wire.RolloutPage,
    filters: RolloutFilters,
    *,
    base: str,
    sort: eval_view.ExampleSort,
) -> dict[str, Any]:
    """The template context of ``eval_run.html`` (the hub's page and the local viewer's)."""
    pages = max(1, -(-rollouts.total // rollouts.per_page))

    def link(query: str) -> str:
        return f"{base or '/'}?{query}#rollouts"

    return {
        "run": run,
        "base": base,
        "histogram": eval_view.histogram_svg(eval_view.scored_rewards(records)),
        "errors": eval_view.error_breakdown(records),
        "examples": eval_view.example_rows(records, sort),
        "examples_truncated": len(records) >= runs.OVERVIEW_LIMIT,
        "sort": sort,
        "rollouts": rollouts,
        "filters": filters,
        "prev_url": link(filters.query(page=filters.page - 1)) if filters.page > 1 else None,
        "next_url": link(filters.query(page=filters.page + 1)) if filters.page < pages else None,
    }


@router.get("/{owner}/{name}/evals/{run_id}", response_class=HTMLResponse)
def eval_page(
    request: Request,
    owner: str,
    name: str,
    run_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    session: SessionDep,
    principal: PrincipalDep,
    sort: eval_view.ExampleSort = "example",
    min_reward: Annotated[str, Query(max_length=40)] = "",
    max_reward: Annotated[str, Query(max_length=40)] = "",
    error: ErrorFilter = "",
    example_id: Annotated[str, Query(max_length=12)] = "",
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> HTMLResponse:
    run, records = runs.run_overview(session, principal, owner, name, run_id)  # 404 unless visible
    filters = rollout_filters(min_reward, max_reward, error, example_id, page)
    rollouts = runs.list_rollouts(
        session,
        principal,
        run_id,
        min_reward=filters.min_reward,
        max_reward=filters.max_reward,
        error=filters.error,
        example_id=filters.example_id,
        page=page,
        per_page=50,
    )
    context = eval_page_context(run, records, rollouts, filters, base=run.url, sort=sort)
    env = services.get_environment(session, principal, owner, name)
    return _render(
        request,
        "eval_run.html",
        env_url=f"/{run.environment}",
        principal=principal,
        can_publish=principal is not None and principal.can_publish_to(env.owner_id),
        **context,
    )


@router.get(
    "/{owner}/{name}/evals/{run_id}/rollouts/{example_id}/{rollout_index}", response_class=HTMLResponse
)
def rollout_page(
    request: Request,
    owner: str,
    name: str,
    run_id: Annotated[int, Path(ge=1, le=2**31 - 1)],
    example_id: Annotated[int, Path(ge=0, le=2**31 - 1)],
    rollout_index: Annotated[int, Path(ge=0, le=10**6)],
    session: SessionDep,
    principal: PrincipalDep,
) -> HTMLResponse:
    run = runs.get_run(session, principal, run_id)
    if run.environment != f"{owner.lower()}/{normalize_name(name)}":
        raise services.HubError(404, f"eval run {run_id} of {owner}/{name} not found (or not visible to you)")
    rollout = runs.get_rollout(session, principal, run_id, example_id, rollout_index)
    prev, nxt, position, total = runs.rollout_neighbours(session, run_id, example_id, rollout_index)
    return _render(
        request,
        "rollout.html",
        run=run,
        r=rollout,
        base=run.url,
        principal=principal,
        nav=rollout_nav(run.url, prev, nxt, position, total),
    )


@dataclass(frozen=True)
class RolloutNav:
    """The rollout viewer's previous/next links (None at either end) and where this rollout stands."""

    prev_url: str | None
    next_url: str | None
    position: int
    total: int


def rollout_nav(
    base: str,
    prev: tuple[int, int] | None,
    nxt: tuple[int, int] | None,
    position: int,
    total: int,
) -> RolloutNav:
    def url(key: tuple[int, int] | None) -> str | None:
        return f"{base.rstrip('/')}/rollouts/{key[0]}/{key[1]}" if key is not None else None

    return RolloutNav(url(prev), url(nxt), position, total)
