"""The inbox's routes (docs/inbox.md): sign in and out, the list, one request's form, its live updates.

| route | what | without a session |
| --- | --- | --- |
| ``GET /inbox`` | the list (``?done=1``: "answer recorded") | the sign-in page (a key, or OpenID) |
| ``POST /inbox/sign-in`` | operator key -> session cookie, 303 to ``/inbox`` | 401: not an operator key |
| ``POST /inbox/sign-out`` | ends the session, 303 to ``/inbox`` | 303 to ``/inbox`` |
| ``GET /inbox/events`` | live updates (``text/event-stream``) | 401 |
| ``GET /inbox/{id}`` | the list and the request's form (opening it starts answering) | sign-in page, 401 |
| ``POST /inbox/{id}`` | answer: 303 to ``/inbox?done=1``; 422 errors, 409 ended, 410 expired | 401 |

Every page carries the form pages' headers (nonce CSP, no framing, no referrer, no caching; plus
``connect-src 'self'`` for the live updates). Every POST is refused when another site sends it (Fetch
Metadata and ``Origin``, as the web form) and, once signed in, without the session's CSRF token. The
key is only ever in a POST body, never in a URL or a log; the cookie is never logged either. Store
outages are a 503 page with ``Retry-After``. An answer goes through ``HumanFunctionService.answer``,
so it ends the request everywhere and its chat message shows who answered.

A person signed in to the web (``gateway.signin``) has an inbox too, holding only the requests whose
approvers name them; any other request is a 404 to them, as an unknown one. Their session is the web
session: signing out of it (``/auth/sign-out``) signs them out here.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping, Sequence

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from channels.approvers import (
    NOT_AN_APPROVER,
    approvals_text,
    approves,
    refusal,
    refusal_reason,
    turn_text,
    who_may_answer,
)
from channels.display import sentence_case
from channels.pages import (
    INBOX_VIA,
    MAX_FORM_FIELDS,
    TrailRow,
    answered_by,
    item_of,
    new_nonce,
    page_headers,
    page_response,
    parse_form,
    posted_fields,
    posted_reason,
    render_inbox,
    render_notice_page,
    render_sign_in,
    render_unavailable_page,
    verify_same_origin,
)
from gateway.core import audit
from gateway.inbox.feed import LIST_LIMIT, MAX_STREAMS_PER_PROCESS, STREAMS, live_updates
from gateway.inbox.sessions import (
    COOKIE,
    COOKIE_PATH,
    SESSION_SECONDS,
    OperatorSessions,
    Session,
    person_session,
)
from gateway.runtime import Runtime
from gateway.signin import sign_in_url, signed_in_person
from gateway.signin.routes import SIGN_OUT_PATH
from gateway.signin.sessions import COOKIE as WEB_COOKIE
from schemas.errors import (
    RETRY_AFTER_SECONDS,
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    SignatureError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import HumanFunction, Person, Status

logger = logging.getLogger(__name__)

router = APIRouter()

NOT_OPERATOR = (
    "That key is not an operator key, or it was revoked. "
    "Create one with: humangate keys create NAME --operator"
)
"""The sign-in error (the same for every refused key, so it says nothing about which keys exist)."""

ANSWERED_NOTICE = "Your answer was recorded; the agent has it."

_HF_ID = re.compile(r"[0-9a-f]{8,64}")


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _sessions(runtime: Runtime) -> OperatorSessions:
    return OperatorSessions(runtime.redis, runtime.keyring)


def _page(html: str, nonce: str, status: int = 200) -> HTMLResponse:
    return page_response(html, nonce, status, connect=True)


def _unavailable(nonce: str, exc: StoreUnavailableError, *, answering: bool = False) -> HTMLResponse:
    logger.warning("inbox unavailable: %s", exc)
    return _page(render_unavailable_page(nonce, answering=answering), nonce, 503)


def _secure(request: Request, runtime: Runtime) -> bool:
    return request.url.scheme == "https" or runtime.settings.public_url.startswith("https://")


async def _session(request: Request) -> Session | None:
    """The operator signed in with a key (their session cookie), else the person signed in to the
    web with the organisation's OpenID provider (``gateway.signin``), else ``None``."""
    runtime = _runtime(request)
    session = await _sessions(runtime).load(request.cookies.get(COOKIE))
    if session is not None or not runtime.settings.oidc_enabled:
        return session
    person = await signed_in_person(request)
    if person is None:
        return None
    return person_session(person, request.cookies.get(WEB_COOKIE, ""))


def _sign_in_page(request: Request, nonce: str, *, error: str | None = None) -> str:
    """The sign-in page: an operator key, and a link to sign in with the organisation's OpenID
    provider when the gateway has one."""
    runtime = _runtime(request)
    link = sign_in_url("/inbox") if runtime.settings.oidc_enabled else None
    return render_sign_in(nonce, error=error, sign_in_link=link)


def _cross_site(request: Request, nonce: str) -> HTMLResponse | None:
    """The refusal of a POST another site made a browser send, or ``None`` for our own pages' posts."""
    try:
        verify_same_origin({name.lower(): value for name, value in request.headers.items()})
    except SignatureError as exc:
        return _refused(nonce, str(exc))
    return None


def _refused(nonce: str, why: str) -> HTMLResponse:
    logger.warning("refused an inbox post: %s", why)
    html = render_notice_page(nonce, "This was not accepted.", "Open the inbox and try again from there.")
    return _page(html, nonce, 403)


async def _inbox_page(
    request: Request,
    session: Session,
    nonce: str,
    current: HumanFunction | None = None,
    *,
    status: int = 200,
    values: Mapping[str, Sequence[str]] | None = None,
    errors: Mapping[str, str] | None = None,
    reason: str = "",
    notice: str | None = None,
) -> HTMLResponse:
    runtime = _runtime(request)
    items = [item_of(hf) for hf in await runtime.store.pending(LIST_LIMIT) if session.sees(hf)]
    trail = [] if current is None else await audit.trail(runtime.redis, current.id)
    html = render_inbox(
        nonce,
        operator=session.operator,
        csrf=session.csrf,
        sign_out=SIGN_OUT_PATH if session.person is not None else "/inbox/sign-out",
        only_theirs=session.person is not None,
        items=items,
        now=runtime.service.clock(),
        current=current,
        values=values,
        errors=errors,
        reason=reason,
        notice=notice,
        trail=[TrailRow(audit.iso(e["at"]), e["event"], audit.details(e)) for e in trail],
    )
    return _page(html, nonce, status)


@router.get("/inbox", include_in_schema=False)
async def show_inbox(request: Request) -> Response:
    nonce = new_nonce()
    try:
        session = await _session(request)
        if session is None:
            return _page(_sign_in_page(request, nonce), nonce)
        notice = ANSWERED_NOTICE if request.query_params.get("done") == "1" else None
        return await _inbox_page(request, session, nonce, notice=notice)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)


@router.post("/inbox/sign-in", include_in_schema=False)
async def sign_in(request: Request) -> Response:
    nonce = new_nonce()
    if (refused := _cross_site(request, nonce)) is not None:
        return refused
    form = await request.form(max_files=0, max_fields=4)
    key = str(form.get("key") or "")
    runtime = _runtime(request)
    try:
        signed = await _sessions(runtime).sign_in(key) if key.strip() else None
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)
    if signed is None:
        logger.warning("refused an inbox sign-in: not an operator key")
        return _page(_sign_in_page(request, nonce, error=NOT_OPERATOR), nonce, 401)
    cookie, _ = signed
    response = RedirectResponse("/inbox", status_code=303, headers=page_headers(nonce, connect=True))
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=SESSION_SECONDS,
        path=COOKIE_PATH,
        secure=_secure(request, runtime),
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/inbox/sign-out", include_in_schema=False)
async def sign_out(request: Request) -> Response:
    nonce = new_nonce()
    if (refused := _cross_site(request, nonce)) is not None:
        return refused
    try:
        session = await _session(request)
        form = await request.form(max_files=0, max_fields=4)
        if session is not None:
            if not session.csrf_ok(str(form.get("hg-csrf") or "")):
                return _refused(nonce, "sign-out without the session's CSRF token")
            await _sessions(_runtime(request)).sign_out(session)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)
    response = RedirectResponse("/inbox", status_code=303, headers=page_headers(nonce, connect=True))
    response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict")
    return response


@router.get("/inbox/events", include_in_schema=False)
async def events(request: Request) -> Response:
    runtime = _runtime(request)
    headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "X-Accel-Buffering": "no"}
    busy = headers | {"Retry-After": str(RETRY_AFTER_SECONDS)}
    try:
        session = await _session(request)
        if session is None:
            return Response("sign in at /inbox first\n", status_code=401, headers=headers)
        if STREAMS.open >= MAX_STREAMS_PER_PROCESS:
            return Response("this gateway process serves the most live streams already\n", 503, busy)
        stream_id = secrets.token_hex(8)
        sessions = _sessions(runtime)
        if not await sessions.admit_stream(session, stream_id, runtime.service.clock()):
            body = "this operator has the most live streams open already; close an inbox tab\n"
            return Response(body, status_code=429, headers=headers | {"Retry-After": "60"})
    except StoreUnavailableError as exc:
        logger.warning("inbox stream refused: %s", exc)
        return Response("the store is unavailable; retrying\n", 503, busy)
    updates = live_updates(runtime.target, runtime.store, sessions, session, stream_id, runtime.service.clock)
    return StreamingResponse(STREAMS.counted(updates), media_type="text/event-stream", headers=headers)


async def _request_of(request: Request, hf_id: str, session: Session, nonce: str) -> HumanFunction | Response:
    runtime = _runtime(request)
    if not _HF_ID.fullmatch(hf_id):
        return await _inbox_page(request, session, nonce, status=404, notice="There is no such request.")
    try:
        hf = await runtime.store.get(hf_id)
    except UnknownRequestError:
        return await _inbox_page(
            request, session, nonce, status=404, notice="There is no such request (any more)."
        )
    if not session.sees(hf):  # a person's inbox holds only their requests: no hint of others
        return await _inbox_page(request, session, nonce, status=404, notice="There is no such request.")
    return hf


@router.get("/inbox/{hf_id}", include_in_schema=False)
async def show_request(request: Request, hf_id: str) -> Response:
    nonce = new_nonce()
    try:
        session = await _session(request)
        if session is None:
            return _page(_sign_in_page(request, nonce), nonce, 401)
        hf = await _request_of(request, hf_id, session, nonce)
        if isinstance(hf, Response):
            return hf
        if hf.is_pending:
            await _runtime(request).service.record(hf.id, "opened", who=session.holder, where=INBOX_VIA)
        if approves(hf, [session.holder]):  # only who may answer starts answering
            hf = await _runtime(request).service.started(hf)  # opening the form counts as starting to answer
        lines = [approvals_text(hf), turn_text(hf)] + ([who_may_answer(hf)] if hf.is_pending else [])
        notice = " ".join(f"{line}." for line in lines if line)
        return await _inbox_page(request, session, nonce, hf, notice=notice or None)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)


@router.post("/inbox/{hf_id}", include_in_schema=False)
async def answer_request(request: Request, hf_id: str) -> Response:
    nonce = new_nonce()
    if (refused := _cross_site(request, nonce)) is not None:
        return refused
    try:
        return await _answer(request, hf_id, nonce)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc, answering=True)


async def _answer(request: Request, hf_id: str, nonce: str) -> Response:
    """Record the posted answer, or the page that says why not (store outages raise)."""
    runtime = _runtime(request)
    session = await _session(request)
    if session is None:
        error = "Your session has ended; sign in again."
        return _page(_sign_in_page(request, nonce, error=error), nonce, 401)
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    tokens = values.pop("hg-csrf", [])
    if not session.csrf_ok(tokens[0] if len(tokens) == 1 else None):
        return _refused(nonce, "an answer without the session's CSRF token")
    hf = await _request_of(request, hf_id, session, nonce)
    if isinstance(hf, Response):
        return hf
    held = [session.holder]
    if hf.is_pending and (why := refusal(hf, held)) is not None:
        logger.info(
            "refused an inbox answer hf=%s channel=%s by=%s: %s",
            hf.id,
            hf.channel,
            session.holder,
            "not an approver" if why == NOT_AN_APPROVER else why,
        )
        await runtime.service.refused(hf, session.holder, INBOX_VIA, refusal_reason(why))
        return await _inbox_page(request, session, nonce, hf, status=403, notice=why + ".")
    try:
        answer = parse_form(hf, values)
        # Answered in the inbox by whoever is signed in, as approvers name them.
        name = session.person.name if session.person is not None else session.operator
        person = Person(channel=INBOX_VIA, id=session.holder, name=name)
        answer = answer.model_copy(
            update={
                "by": answered_by(session.operator),
                "via": INBOX_VIA,
                "person": person,
                "held": tuple(held),
            }
        )
        answered = await runtime.service.answer(hf, answer)
    except InvalidAnswerError as exc:
        return await _inbox_page(
            request,
            session,
            nonce,
            hf,
            status=422,
            values=posted_fields(values),
            errors=exc.errors,
            reason=posted_reason(values),
        )
    except ExpiredError:
        ended = hf.model_copy(update={"status": Status.EXPIRED})
        return await _inbox_page(request, session, nonce, ended, status=410, notice="This request expired.")
    except ClosedError as exc:
        ended = await runtime.store.get(hf.id)
        return await _inbox_page(request, session, nonce, ended, status=409, notice=sentence_case(str(exc)))
    logger.info("inbox answer hf=%s channel=%s by=%s", hf.id, hf.channel, session.holder)
    if answered.is_pending:  # one approval of several: the request stays, showing the count
        return RedirectResponse(f"/inbox/{hf.id}", status_code=303, headers=page_headers(nonce, connect=True))
    return RedirectResponse("/inbox?done=1", status_code=303, headers=page_headers(nonce, connect=True))
