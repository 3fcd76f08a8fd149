"""Web sign-in routes (docs/http.md), and ``signed_in_person``, which the web form and the inbox call.

| route | what |
| --- | --- |
| ``GET /auth/sign-in?next=<path>`` | 303 to the provider (400 for a ``next`` that is not a path here) |
| ``GET /auth/callback`` | from the provider: 303 to ``next`` with a session cookie, or 403 saying why not |
| ``POST /auth/sign-out`` | ends the session (same-site posts only), "You are signed out" |

Without the OIDC settings every route is a 404 and ``signed_in_person`` is always ``None``. The
pages carry the form pages' headers; no code, token, state or cookie is ever logged.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from channels.display import sentence_case
from channels.pages import new_nonce, page_headers, page_response, render_notice_page, verify_same_origin
from gateway.runtime import Runtime
from gateway.signin.provider import Provider
from gateway.signin.sessions import COOKIE, SESSION_SECONDS, SIGN_IN_COOKIE, SIGN_IN_SECONDS, WebSessions
from schemas.errors import SignatureError, SignInError, StoreUnavailableError
from schemas.models import Person

logger = logging.getLogger(__name__)

router = APIRouter()

SIGN_IN_PATH = "/auth/sign-in"
CALLBACK_PATH = "/auth/callback"
SIGN_OUT_PATH = "/auth/sign-out"

_LOCAL_PATH = re.compile(r"/(?![/\\])[\x21-\x7e]*")
"""A path on this site: starts with one ``/`` (``//host`` and ``/\\host`` name another host), printable
ASCII without spaces or backslashes anywhere that browsers would read as ``/``."""


def local_path(next_path: str | None) -> str | None:
    """``next_path`` when it is a path on this site (no scheme, no host), else ``None``."""
    if not next_path:
        return "/"
    if not _LOCAL_PATH.fullmatch(next_path) or "\\" in next_path:
        return None
    return next_path


def sign_in_url(next_path: str) -> str:
    """The link that signs a person in and brings them back to ``next_path`` (a local path)."""
    return f"{SIGN_IN_PATH}?next={quote(next_path, safe='/')}"


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _provider(request: Request) -> Provider | None:
    provider: Provider | None = getattr(request.app.state, "sign_in_provider", None)
    return provider


def _secure(request: Request, runtime: Runtime) -> bool:
    return request.url.scheme == "https" or runtime.settings.public_url.startswith("https://")


async def signed_in_person(request: Request) -> Person | None:
    """The person signed in to the web in this browser (``Person(channel="email", id=<verified email,
    lower case>, name=...)``, i.e. ``email:<email>``), or ``None``: not signed in, or web sign-in is
    not configured. Raises ``StoreUnavailableError`` while Redis cannot be reached."""
    if _provider(request) is None:
        return None
    return await WebSessions(_runtime(request).redis).person(request.cookies.get(COOKIE))


def _page(nonce: str, status: int, heading: str, *lines: str) -> HTMLResponse:
    return page_response(render_notice_page(nonce, heading, *lines), nonce, status)


def _not_found() -> Response:
    return Response("web sign-in is not configured on this gateway\n", 404, {"Cache-Control": "no-store"})


@router.get(SIGN_IN_PATH, include_in_schema=False)
async def sign_in(request: Request) -> Response:
    provider = _provider(request)
    if provider is None:
        return _not_found()
    nonce = new_nonce()
    next_path = local_path(request.query_params.get("next"))
    if next_path is None:
        logger.warning("refused a sign-in: next is not a path on this site")
        return _page(nonce, 400, "This sign-in link is not valid.", "It would lead to another site.")
    runtime = _runtime(request)
    try:
        start = await WebSessions(runtime.redis).start(next_path, request.cookies.get(SIGN_IN_COOKIE))
        url = await provider.authorization_url(state=start.state, nonce=start.nonce, verifier=start.verifier)
    except StoreUnavailableError:
        return _page(nonce, 503, "Signing in is not possible right now.", "Try again in a few seconds.")
    except SignInError as exc:
        return _page(nonce, 502, "Signing in is not possible right now.", f"{sentence_case(str(exc))}.")
    response = RedirectResponse(url, status_code=303, headers=page_headers(nonce))
    response.set_cookie(
        SIGN_IN_COOKIE,
        start.browser,
        max_age=SIGN_IN_SECONDS,
        path="/auth",
        secure=_secure(request, runtime),
        httponly=True,
        samesite="lax",
    )
    return response


@router.get(CALLBACK_PATH, include_in_schema=False)
async def callback(request: Request) -> Response:
    provider = _provider(request)
    if provider is None:
        return _not_found()
    nonce = new_nonce()
    runtime = _runtime(request)
    params = request.query_params
    try:
        pending = await WebSessions(runtime.redis).take(
            params.get("state", ""), request.cookies.get(SIGN_IN_COOKIE)
        )
        if pending is None:
            logger.warning("refused a sign-in callback: unknown, used or another browser's state")
            return _page(
                nonce,
                400,
                "This sign-in could not be completed.",
                "It took too long, was used already, or was started in another browser. "
                "Open your link again to sign in.",
            )
        if "error" in params or "code" not in params:
            logger.warning("sign-in ended at the provider: %s", params.get("error", "no code")[:40])
            return _page(nonce, 403, "You are not signed in.", "The sign-in was canceled or refused.")
        identity = await provider.identity(
            code=params["code"], verifier=pending.verifier, nonce=pending.nonce
        )
        cookie = await WebSessions(runtime.redis).open(identity)
    except StoreUnavailableError:
        return _page(nonce, 503, "Signing in is not possible right now.", "Try again in a few seconds.")
    except SignInError as exc:
        return _page(nonce, 403, "You could not be signed in.", f"{sentence_case(str(exc))}.")
    response = RedirectResponse(pending.next, status_code=303, headers=page_headers(nonce))
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=SESSION_SECONDS,
        path="/",
        secure=_secure(request, runtime),
        httponly=True,
        samesite="lax",
    )
    response.delete_cookie(SIGN_IN_COOKIE, path="/auth", httponly=True, samesite="lax")
    return response


@router.post(SIGN_OUT_PATH, include_in_schema=False)
async def sign_out(request: Request) -> Response:
    if _provider(request) is None:
        return _not_found()
    nonce = new_nonce()
    try:
        verify_same_origin({name.lower(): value for name, value in request.headers.items()})
    except SignatureError as exc:
        logger.warning("refused a sign-out: %s", exc)
        return _page(nonce, 403, "This was not accepted.", "It was sent from another site.")
    try:
        await WebSessions(_runtime(request).redis).close(request.cookies.get(COOKIE))
    except StoreUnavailableError:
        return _page(nonce, 503, "Signing out is not possible right now.", "Try again in a few seconds.")
    response = _page(nonce, 200, "You are signed out.", "You can close this page.")
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax")
    return response
