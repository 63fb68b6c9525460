"""Server-rendered web UI (Jinja2). Read-only except for logging in and out.

Private environments are visible with a token in the Authorization header or the session cookie set by
``/login``; the cookie is honoured on GET/HEAD only (see ``deps.request_token``), so no page can be
driven into a state change from another site.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from html import escape
from typing import Annotated, Any, Literal
from urllib.parse import urlencode, urlsplit

import nh3
from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from packaging.version import Version as PEP440Version

from hub_server import csrf, eval_view, leaderboard_chart, schemas, services
from hub_server.auth import COOKIE_NAME, AuthError
from hub_server.deps import HubDep, PrincipalDep, SessionDep
from hub_server.releases import latest_version, sorted_versions
from hub_server.services import account_view, runs
from hub_server.services.catalogue import popular_tags
from verifiers.hub import wire
from verifiers.hub.packaging import normalize_name

router = APIRouter(include_in_schema=False)

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def _same_host(src: str) -> bool:
    parts = urlsplit(src.strip())
    return not parts.scheme and not parts.netloc


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    # An image from another host would tell that host who reads the page (and when): link to it instead.
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if _same_host(src):
        return f'<img src="{escape(src)}" alt="{escape(alt)}">'
    return f'<a href="{escape(src)}">{escape(alt or src)}</a>'


def _keep_local_images(tag: str, attr: str, value: str) -> str | None:
    # Raw HTML <img> in a README: drop a src on another host (the CSP would block it anyway).
    if tag == "img" and attr == "src" and not _same_host(value):
        return None
    return value


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    md.add_render_rule("image", _image_as_link)
    return md


@lru_cache(maxsize=256)
def render_readme(text: str, content_type: str) -> str:
    """README as safe HTML: markdown rendered, then sanitised (raw HTML in a README is allowed, scripts not).

    Images load only from the hub itself: markdown images from other hosts become links, and a raw
    ``<img>`` from another host loses its ``src`` (the page's CSP says ``img-src 'self'`` as well).
    """
    if not text.strip():
        return "<p><em>No README.</em></p>"
    if content_type in ("text/markdown", "text/x-markdown", ""):
        return nh3.clean(
            _markdown().render(text),
            link_rel="noopener noreferrer nofollow",
            attribute_filter=_keep_local_images,
        )
    return f"<pre>{escape(text)}</pre>"


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
    response = _render(request, "login.html", principal=principal, error=None, login_csrf=token)
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
            request, "login.html", status_code=401, principal=None, error=str(exc), login_csrf=form_token
        )
    expires_at = services.token_expiry(hub, principal.token_id)
    max_age = int(timedelta(days=30).total_seconds())
    if expires_at is not None:
        max_age = max(0, min(max_age, int((expires_at - datetime.now(UTC)).total_seconds())))
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        token.strip(),
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=hub.settings.cookie_secure,
    )
    return response


@router.post("/logout", response_model=None)
def logout(request: Request, token: Annotated[str, Form(alias=csrf.FIELD, max_length=100)] = "") -> Response:
    if request.cookies.get(COOKIE_NAME) and csrf.session_token(request, token) is None:
        return render_error(request, 403, "log out from the hub's own page (its CSRF token did not match)")
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE_NAME)
    return response


@router.get("/{owner}", response_class=HTMLResponse)
def owner_page(owner: str) -> Response:
    return RedirectResponse(f"/?{urlencode({'owner': owner})}", status_code=307)


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
    base = _base_url(request)
    board = runs.leaderboard(session, env)
    return _render(
        request,
        "environment.html",
        env=env,
        summary=schemas.env_summary(env),
        versions=sorted_versions(env),
        current=current,
        files=[schemas.file_out(env, f) for f in current.files] if current else [],
        readme=render_readme(current.readme, current.readme_content_type) if current else "",
        evals=services.list_evals(session, env),
        board=board,
        starred=account_view.has_starred(session, principal, env.id),
        all_runs=runs.list_runs(session, principal, env, per_page=50),
        chart=leaderboard_chart.reward_chart_svg(board.entries),
        newer=newest if newest and current and _is_newer(newest.version, current.version) else None,
        install_vf=f"vf-install {env.full_name}" + (f"@=={current.version}" if current and version else ""),
        install_pip=f"pip install --index-url {base}/simple/ {env.name}"
        + (f"=={current.version}" if current and version else ""),
        principal=principal,
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
    return _render(request, "eval_run.html", env_url=f"/{run.environment}", principal=principal, **context)


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
    return _render(request, "rollout.html", run=run, r=rollout, base=run.url, principal=principal)
