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
| right secret, request pending, with approvers (no sign-in here) | 403, who may answer | 403 |
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

from channels.approvers import FORM_LINK, NOT_AN_APPROVER, NOT_APPROVER, WEB_NEEDS_SIGN_IN, who_may_answer
from channels.base import Desk, Inbound, RenderContext
from channels.display import sentence_case
from channels.web.channel import (
    parse_form,
    posted_fields,
    posted_reason,
    render_page,
    render_unavailable_page,
    render_unknown_page,
    verify_same_origin,
)
from channels.web.headers import new_nonce, page_headers, page_response
from channels.web.page import render_expired_page, render_notice_page, render_refused_link_page
from schemas.errors import (
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    SignatureError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import HumanFunction, Status

logger = logging.getLogger(__name__)

MAX_FORM_FIELDS = 200
"""Most fields one form post may carry (32 properties x a multi-select's options fit)."""

RECORDED_NOTICE = "Your answer was recorded. You can close this page."

NOT_SAVED_NOTICE = (
    "Your answer could not be saved: humangate cannot reach its store for a moment. Nothing is lost; "
    "submit again in a few seconds."
)


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


def _approvers_only(hf: HumanFunction, nonce: str) -> HTMLResponse | None:
    """The page of a pending request with approvers: only a signed-in approver could answer it here,
    and this gateway has no sign-in for the web form, so its link alone answers nothing (403)."""
    only = who_may_answer(hf)
    if only is None or not hf.is_pending:
        return None
    return page_response(
        render_notice_page(nonce, NOT_AN_APPROVER + ".", f"{only}.", WEB_NEEDS_SIGN_IN), nonce, 403
    )


async def show_form(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """``GET /f/{token}``: the form, or the request's outcome, or why the link opens nothing."""
    token = str(request.path_params["token"])
    nonce = new_nonce()
    hf = await _open(desk, token, nonce)
    if isinstance(hf, Response):
        return hf
    if (refused := _approvers_only(hf, nonce)) is not None:
        return refused
    hf = await desk.started(hf)  # opening the form counts as starting to answer
    notice = RECORDED_NOTICE if request.query_params.get("done") == "1" and not hf.is_pending else None
    return page_response(render_page(hf, _context(desk, hf), nonce=nonce, notice=notice), nonce)


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
    hf = await _open(desk, token, nonce, answering=True)
    if isinstance(hf, Response):
        return hf
    if (refused := _approvers_only(hf, nonce)) is not None:
        logger.info("refused a form answer hf=%s channel=web: the request has approvers", hf.id)
        await desk.refused(hf, FORM_LINK, NOT_APPROVER)
        return refused
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    ctx = _context(desk, hf)
    try:
        answer = parse_form(hf, values)
        await desk.answer(hf, answer)
    except InvalidAnswerError as exc:
        html = render_page(
            hf,
            ctx,
            nonce=nonce,
            values=posted_fields(values),
            errors=exc.errors,
            reason=posted_reason(values),
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
            render_page(hf, _context(desk, hf), nonce=nonce, notice=sentence_case(str(exc))),
            nonce,
            409,
        )
    logger.info("web form answered hf=%s channel=web", hf.id)
    return RedirectResponse(f"/f/{token}?done=1", status_code=303, headers=page_headers(nonce))
