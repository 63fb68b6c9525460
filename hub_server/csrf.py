"""CSRF tokens for the web forms that act with the session cookie (log out, create and revoke tokens).

The form token is an HMAC keyed by the web session id (the cookie's value: random, one per sign-in,
``services.web_sessions``; never the API token): only a page that can read the hub's own HTML (the same
origin) learns it, the server keeps no state for it beyond the session, and it changes with every
login, so an old session's form token is refused for a new one. A form post is accepted only with a
matching field and a same-origin ``Origin``/``Referer`` when the browser sends one; the session itself
must still be live (the routers check it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

from hub_server.auth import COOKIE_NAME, is_session_id

FIELD = "csrf"
#: Before there is a session, the login form is protected by a double-submit cookie (path /login).
LOGIN_COOKIE = "vf_hub_login_csrf"
_PURPOSE = b"verifiers-hub web form v2"  # v2: keyed by the session id, not the API token


def form_token(session_id: str) -> str:
    return hmac.new(session_id.encode(), _PURPOSE, hashlib.sha256).hexdigest()


def session_cookie(request: Request) -> str | None:
    """The web session id in the request's cookie (None: none, or a value that is no session id)."""
    cookie = request.cookies.get(COOKIE_NAME) or ""
    return cookie if is_session_id(cookie) else None


def token_for(request: Request) -> str:
    """The form token of the request's session cookie ('' when signed out)."""
    cookie = session_cookie(request)
    return form_token(cookie) if cookie else ""


def same_origin(request: Request) -> bool:
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return True  # non-browser clients send neither
    return urlsplit(origin).netloc == request.headers.get("host", "")


def session_token(request: Request, submitted: str) -> str | None:
    """The session cookie's session id when ``submitted`` is its form token from this origin, else None."""
    cookie = session_cookie(request)
    if not cookie or not submitted or not same_origin(request):
        return None
    return cookie if hmac.compare_digest(form_token(cookie), submitted) else None


def login_token(request: Request) -> str:
    """The login form's token: the one its cookie already holds, else a new one (the caller sets the cookie)."""
    return request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)


def login_ok(request: Request, submitted: str) -> bool:
    cookie = request.cookies.get(LOGIN_COOKIE)
    return (
        bool(cookie and submitted) and same_origin(request) and hmac.compare_digest(cookie or "", submitted)
    )
