"""The hosted web form: ``GET /f/{token}`` renders, ``POST /f/{token}`` answers.

The token is a capability (id + 192-bit secret); it is never logged (only the id is). A GET never
records anything. A POST is refused when it comes from another site.

What a link gets (every page has the form pages' look, CSP and headers, and needs no JavaScript):

| the link | GET | POST |
| --- | --- | --- |
| not shaped like a token humangate issues | 404 | 404 |
| well-formed, but no such request (never created, or forgotten after it ended) | 404 | 404 |
| the request exists, the secret is wrong | 403 | 403 |
| right secret, request expired (status expired, or its deadline passed) | 410 | 410 |
| right secret, request answered, declined or canceled | 200, the outcome | 409, "already ... by X" |
| right secret, request pending | 200, the form | 303 to the outcome, or 422 with the errors |
| right secret, request pending, with approvers, not signed in | 303 to the sign-in | 401, a sign-in link |
| ... with approvers, signed in but not an approver | 403, who may answer | 403 |
| ... with approvers, web sign-in off | 403, who may answer and where | 403 |
| the store (Redis) cannot be reached | 503, "try again in a moment" | 503, the answer kept |

A malformed token and an unknown id are both 404: neither names a request humangate can find, and
Redis keeps no trace of a request a while after it ended (a day; an hour for an anonymous
caller's), so "gone" (410) could not be told from "never existed". 410 is kept for what humangate
knows: this request expired. A wrong secret is 403: the request exists but the link does not open
it (cut short or changed on its way).
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from channels.approvers import (
    FORM_LINK,
    FORM_VIA,
    NOT_AN_APPROVER,
    WEB_NEEDS_SIGN_IN,
    approvals_text,
    refusal,
    refusal_reason,
    turn_text,
    who_may_answer,
)
from channels.base import Desk, Inbound, RenderContext
from channels.display import sentence_case
from channels.web.headers import new_nonce, page_headers, page_response
from channels.web.page import (
    render_expired_page,
    render_notice_page,
    render_page,
    render_refused_link_page,
    render_unavailable_page,
    render_unknown_page,
)
from channels.web.post import parse_form, posted_fields, posted_reason, verify_same_origin
from schemas.errors import (
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    SignatureError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import Answer, HumanFunction, Person, Status

logger = logging.getLogger(__name__)

MAX_FORM_FIELDS = 200
"""Most fields one form post may carry (32 properties x a multi-select's options fit)."""

RECORDED_NOTICE = "Your answer was recorded. You can close this page."

CANNOT_ANSWER_HERE = "This request cannot be answered with its link alone."
"""The heading for someone not signed in, where web sign-in is off, on a request with approvers."""

NOT_SAVED_NOTICE = (
    "Your answer could not be saved: humangate cannot reach its store for a moment. Nothing is lost; "
    "submit again in a few seconds."
)


def _here(request: Request) -> str:
    """This page's local path and query, to come back to after signing in."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def ask_to_sign_in(request: Request, desk: Desk, nonce: str) -> Response | None:
    """The response that asks the person to sign in and brings them back to this page, or ``None``
    when web sign-in is not configured. A GET is sent to the sign-in (303); a post gets a 401 page
    with its link, since a form post's redirect may not leave for the provider under the page's
    ``form-action 'self'``, and nothing is recorded."""
    link = desk.sign_in_url(_here(request))
    if link is None:
        return None
    if request.method == "GET":
        return RedirectResponse(link, status_code=303, headers=page_headers(nonce))
    html = render_notice_page(
        nonce,
        "Sign in to answer.",
        "Your sign-in has ended; nothing was recorded. Sign in, then answer again.",
        link=link,
    )
    return page_response(html, nonce, 401)


async def _sign_in_needed(request: Request, desk: Desk, nonce: str) -> tuple[Person | None, Response | None]:
    """The signed-in person (or ``None``), and when ``HUMANGATE_WEB_SIGN_IN=required`` finds none,
    the response that asks for a sign-in (``ask_to_sign_in``)."""
    person = await desk.signed_in_person(request)
    if person is None and desk.settings.web_sign_in == "required":
        return None, ask_to_sign_in(request, desk, nonce)
    return person, None


def held_by(person: Person) -> str:
    """A person signed in to the web, in the approvers' forms: ``email:ada@example.com``."""
    return f"{person.channel}:{person.id}"


def _answered_as(answer: Answer, person: Person | None) -> Answer:
    """The answer, carrying the signed-in person who gave it (if any): answered on the web form
    (``answeredBy.channel`` ``web``) by ``email:<address>``, which is also what they hold among the
    approvers, so it counts as their approval and takes their turn."""
    if person is None:
        return answer
    who = held_by(person)
    answering = Person(channel=FORM_VIA, id=who, name=person.name)
    update = {"person": answering, "by": f"{person.name} ({person.id})", "held": (who,)}
    return answer.model_copy(update=update)


def _unavailable(nonce: str, exc: StoreUnavailableError, *, answering: bool = False) -> HTMLResponse:
    logger.warning("form page unavailable channel=web: %s", exc)
    return page_response(render_unavailable_page(nonce, answering=answering), nonce, 503)


def _context(desk: Desk, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=desk.form_url(hf), now=desk.now())


def _expired(desk: Desk, hf: HumanFunction) -> bool:
    """Expired, or past its deadline and not yet ended by the reaper."""
    return hf.status is Status.EXPIRED or (hf.is_pending and desk.now() >= hf.deadline)


async def _open(
    desk: Desk, token: str, nonce: str, *, answering: bool = False
) -> HumanFunction | HTMLResponse:
    """The Human Function the link opens, or the page that says why it opens none (404 / 403 /
    410, or 503 while the store cannot be reached)."""
    link = desk.read_form_link(token)
    if link is None:
        return page_response(render_unknown_page(nonce), nonce, 404)
    try:
        hf = await desk.get(link.hf_id)
    except UnknownRequestError:
        return page_response(render_unknown_page(nonce), nonce, 404)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc, answering=answering)
    if not link.opens(hf):
        logger.warning("refused a form link with a wrong secret hf=%s channel=web", hf.id)
        return page_response(render_refused_link_page(nonce), nonce, 403)
    if _expired(desk, hf):
        return page_response(render_expired_page(hf, nonce), nonce, 410)
    return hf


async def _approvers_only(
    request: Request,
    desk: Desk,
    hf: HumanFunction,
    person: Person | None,
    nonce: str,
    *,
    answering: bool = False,
) -> Response | None:
    """``None`` when whoever opened the link may answer ``hf``; else the response that says why not.

    A pending request with approvers is answered only by a signed-in approver (MCP's URL mode: the
    server checks who opened the URL, the link alone is not enough). Without web sign-in nobody can
    answer it here (403); someone not signed in is asked to sign in; a signed-in person who is not an
    approver is refused (403) and nothing changes; a refused answer (``answering``) is logged and
    written in the audit trail."""
    only = who_may_answer(hf)
    if only is None or not hf.is_pending:
        return None
    progress = [f"{line}." for line in (approvals_text(hf), turn_text(hf)) if line]
    if person is None:
        # Nobody is identified yet, so nobody is refused: with web sign-in, they are asked to sign
        # in and nothing is recorded; without it, the page says where the request can be answered.
        ask = ask_to_sign_in(request, desk, nonce)
        if ask is not None:
            return ask
        if answering:
            logger.info("refused a form answer hf=%s channel=web by=%s: no sign-in", hf.id, FORM_LINK)
            await desk.refused(hf, FORM_LINK, refusal_reason(NOT_AN_APPROVER))
        html = render_notice_page(nonce, CANNOT_ANSWER_HERE, f"{only}.", *progress, WEB_NEEDS_SIGN_IN)
        return page_response(html, nonce, 403)
    who = held_by(person)
    why = refusal(hf, [who])
    if why is None:
        return None
    if answering:
        words = "not an approver" if why == NOT_AN_APPROVER else why
        logger.info("refused a form answer hf=%s channel=web by=%s: %s", hf.id, who, words)
        await desk.refused(hf, who, refusal_reason(why))
    signed_in = f"You are signed in as {person.name} ({person.id})."
    html = render_notice_page(nonce, why + ".", f"{only}.", *progress, signed_in)
    return page_response(html, nonce, 403)


async def show_form(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """``GET /f/{token}``: the form, or the request's outcome, or why the link opens nothing."""
    token = str(request.path_params["token"])
    nonce = new_nonce()
    try:
        person, ask = await _sign_in_needed(request, desk, nonce)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)
    if ask is not None:
        return ask
    hf = await _open(desk, token, nonce)
    if isinstance(hf, Response):
        return hf
    if (refused := await _approvers_only(request, desk, hf, person, nonce)) is not None:
        return refused
    hf = await desk.started(hf, held_by(person) if person else None)  # opening it starts answering
    notice = RECORDED_NOTICE if request.query_params.get("done") == "1" and not hf.is_pending else None
    html = render_page(hf, _context(desk, hf), nonce=nonce, notice=notice, person=person)
    return page_response(html, nonce)


async def submit_form(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """``POST /f/{token}``: record the answer (303 to the outcome), or show why not."""
    token = str(request.path_params["token"])
    nonce = new_nonce()
    try:
        verify_same_origin(inbound.headers)
    except SignatureError as exc:
        logger.warning("refused cross-site form post channel=web: %s", exc)
        html = render_notice_page(
            nonce,
            "This answer was not accepted.",
            "It was sent from another site. Open the form from its link and answer there.",
        )
        return page_response(html, nonce, 403)
    try:
        person, ask = await _sign_in_needed(request, desk, nonce)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc, answering=True)
    if ask is not None:
        return ask
    hf = await _open(desk, token, nonce, answering=True)
    if isinstance(hf, Response):
        return hf
    if (refused := await _approvers_only(request, desk, hf, person, nonce, answering=True)) is not None:
        return refused
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    ctx = _context(desk, hf)
    try:
        answer = _answered_as(parse_form(hf, values), person)
        await desk.answer(hf, answer)
    except InvalidAnswerError as exc:
        html = render_page(
            hf,
            ctx,
            nonce=nonce,
            values=posted_fields(values),
            errors=exc.errors,
            reason=posted_reason(values),
            person=person,
        )
        return page_response(html, nonce, 422)
    except StoreUnavailableError as exc:
        logger.warning("form answer not saved hf=%s channel=web: %s", hf.id, exc)
        html = render_page(
            hf,
            ctx,
            nonce=nonce,
            values=posted_fields(values),
            reason=posted_reason(values),
            notice=NOT_SAVED_NOTICE,
            person=person,
        )
        return page_response(html, nonce, 503)
    except ExpiredError:
        return page_response(render_expired_page(hf, nonce), nonce, 410)
    except ClosedError as exc:
        try:
            hf = await desk.get(hf.id)
        except StoreUnavailableError as unavailable:
            return _unavailable(nonce, unavailable, answering=True)
        return page_response(
            render_page(hf, _context(desk, hf), nonce=nonce, notice=sentence_case(str(exc)), person=person),
            nonce,
            409,
        )
    return RedirectResponse(f"/f/{token}?done=1", status_code=303, headers=page_headers(nonce))
