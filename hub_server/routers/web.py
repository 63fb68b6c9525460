"""Server-rendered web UI (Jinja2). Read-only except for logging in and out.

Private environments are visible with a token in the Authorization header or the session cookie set by
``/login``; the cookie is honoured on GET/HEAD only (see ``deps.request_token``), so no page can be
driven into a state change from another site.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from html import escape
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

import nh3
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

from hub_server import schemas, services
from hub_server.auth import COOKIE_NAME, AuthError
from hub_server.deps import HubDep, PrincipalDep, SessionDep
from hub_server.releases import latest_version, sorted_versions

router = APIRouter(include_in_schema=False)

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS = {
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
        request, template, {"base_url": _base_url(request), **context}, status_code=status_code
    )
    response.headers.update(_SECURITY_HEADERS)
    return response


def render_error(request: Request, status_code: int, detail: str) -> HTMLResponse:
    return _render(request, "error.html", status_code=status_code, code=status_code, detail=detail)


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return True  # non-browser clients send neither
    return urlsplit(origin).netloc == request.headers.get("host", "")


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
        principal=principal,
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, principal: PrincipalDep) -> HTMLResponse:
    return _render(request, "login.html", principal=principal, error=None)


@router.post("/login", response_model=None)
def login(request: Request, hub: HubDep, token: Annotated[str, Form(max_length=200)]) -> Response:
    if not _same_origin(request):
        return render_error(request, 403, "cross-site login refused")
    try:
        principal = hub.principal(token.strip())
    except AuthError as exc:
        return _render(request, "login.html", status_code=401, principal=None, error=str(exc))
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
def logout(request: Request) -> Response:
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE_NAME)
    return response


@router.get("/{owner}", response_class=HTMLResponse)
def owner_page(owner: str) -> Response:
    return RedirectResponse(f"/?{urlencode({'owner': owner})}", status_code=307)


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
    current = services.get_version(env, version) if version else latest_version(env)
    base = _base_url(request)
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
        install_vf=f"vf-install {env.full_name}" + (f"@=={current.version}" if current and version else ""),
        install_pip=f"pip install --index-url {base}/simple/ {env.name}"
        + (f"=={current.version}" if current and version else ""),
        principal=principal,
    )
