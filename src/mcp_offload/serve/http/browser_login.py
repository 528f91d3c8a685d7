"""How a person with a browser gets onto the status page of a server that requires a token.

A browser cannot send `Authorization: Bearer …`, so `/login` trades a token for a cookie: a form (`GET /login`,
`POST /login` with `token=…`) or a link (`GET /login?token=…`, e.g. printed for an operator) checks the token like
the bearer auth does and answers `303 See Other` to `/` with a cookie that is:

- HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Path=/;
- not the token: `principal.expiry.signature`, an HMAC-SHA256 under a key made at startup (a restart logs everyone
  out), valid for `COOKIE_TTL_S`;
- accepted only for reading the status: `GET /` and `GET /stats`, never for `/mcp` or `/sse`.

Without a valid credential, `/` answers a short HTML 401 page with the login form instead of a JSON-RPC error.
Everything here sits behind the Host/Origin check (web/host_check.py), like every route but /healthz.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import time
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mcp_offload.web.page import html_page

COOKIE_NAME = "mcp_offload_status"
COOKIE_TTL_S = 12 * 3600
MAX_FORM_BYTES = 4096
BROWSER_PATHS = frozenset({"/", "/stats"})  # what the cookie may read (GET only)

Authenticate = Callable[[str], "str | None"]  # a token → its principal, or None


class BrowserSessions:
    """Issues and checks the status-page cookies of one server process."""

    def __init__(self, ttl_s: float = COOKIE_TTL_S, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._ttl_s = ttl_s
        self._clock = clock

    def issue(self, principal: str) -> str:
        expires = int(self._clock() + self._ttl_s)
        body = f"{principal}.{expires}"
        return f"{body}.{self._sign(body)}"

    def principal(self, value: str | None) -> str | None:
        """The principal a cookie value was issued to, if it is ours, intact and not expired."""
        if not value or value.count(".") != 2:
            return None
        principal, expires, signature = value.split(".")
        if not hmac.compare_digest(signature, self._sign(f"{principal}.{expires}")):
            return None
        if not expires.isdigit() or int(expires) < self._clock():
            return None
        return principal

    def from_headers(self, headers: dict[bytes, bytes] | list[tuple[bytes, bytes]]) -> str | None:
        for key, raw in headers.items() if isinstance(headers, dict) else headers:
            if key != b"cookie":
                continue
            cookies: SimpleCookie = SimpleCookie()
            try:
                cookies.load(raw.decode("latin-1"))
            except Exception:  # a malformed Cookie header is just no cookie
                continue
            morsel = cookies.get(COOKIE_NAME)
            if morsel is not None:
                return self.principal(morsel.value)
        return None

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode("utf-8"), hashlib.sha256).hexdigest()


def login_endpoint(
    sessions: BrowserSessions | None, authenticate: Authenticate
) -> Callable[[Request], Awaitable[Response]]:
    """`/login`: the form (GET), the check (POST form or GET ?token=), then 303 to / with the cookie."""

    async def login(request: Request) -> Response:
        if sessions is None:  # no token configured: the page is open
            return RedirectResponse("/", status_code=303)
        if request.method == "POST":
            body = await request.body()
            form = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
            token = (form.get("token") or [""])[0]
        else:
            token = request.query_params.get("token", "")
            if not token:
                return login_page()
        principal = authenticate(token.strip())
        if principal is None:
            return login_page("That token is not valid for this server.", status=401)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE_NAME,
            sessions.issue(principal),
            max_age=COOKIE_TTL_S,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"  # a ?token= link must not leak onward
        return response

    return login


def login_page(problem: str | None = None, *, status: int = 200) -> HTMLResponse:
    """The login form; also the body of a 401 for a browser on `/`."""
    note = f"<p class=error>{html.escape(problem)}</p>" if problem else ""
    body = html_page(
        "mcp-offload: log in",
        "<h1>mcp-offload status</h1>"
        "<p>This server requires a token. Enter one of its tokens (the value of <code>--token</code> or "
        "<code>MCP_OFFLOAD_TOKEN</code>) to see the status page; a cookie keeps you logged in for 12 hours.</p>"
        f"{note}"
        '<form method=post action="/login"><input type=password name=token autocomplete=current-password '
        'placeholder="token" autofocus> <button type=submit>Log in</button></form>',
    )
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="mcp-offload"'
    return HTMLResponse(body, status_code=status, headers=headers)
