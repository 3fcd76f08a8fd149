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
| the store (Redis) cannot be reached | 503, "try again in a moment" | 503, the answer kept |

A malformed token and an unknown id are both 404: neither names a request humangate can find, and
Redis keeps no trace of a request a while after it ended (a day; an hour for an anonymous
caller's), so "gone" (410) could not be told from "never existed". 410 is kept for what humangate
knows: this request expired. A wrong secret is 403: the request exists but the link does not open
it (cut short or changed on its way).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from channels.base import RenderContext
from channels.display import sentence_case
from channels.web.channel import (
    WebChannel,
    posted_fields,
    posted_reason,
    render_page,
    render_unavailable_page,
    render_unknown_page,
)
from channels.web.page import render_expired_page, render_notice_page, render_refused_link_page
from gateway.core.links import form_url, parse_form_token
from gateway.runtime import Runtime
from gateway.security import new_nonce, page_headers, page_response
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

router = APIRouter()

MAX_FORM_FIELDS = 200
"""Most fields one form post may carry (32 properties x a multi-select's options fit)."""

RECORDED_NOTICE = "Your answer was recorded. You can close this page."

NOT_SAVED_NOTICE = (
    "Your answer could not be saved: humangate cannot reach its store for a moment. Nothing is lost; "
    "submit again in a few seconds."
)


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _unavailable(nonce: str, exc: StoreUnavailableError, *, answering: bool = False) -> HTMLResponse:
    logger.warning("form page unavailable channel=web: %s", exc)
    return page_response(render_unavailable_page(nonce, answering=answering), nonce, 503)


def _context(runtime: Runtime, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=form_url(runtime.settings, hf), now=runtime.service.clock())


def _expired(runtime: Runtime, hf: HumanFunction) -> bool:
    """Expired, or past its deadline and not yet ended by the reaper."""
    return hf.status is Status.EXPIRED or (hf.is_pending and runtime.service.clock() >= hf.deadline)


async def _open(
    runtime: Runtime, token: str, nonce: str, *, answering: bool = False
) -> HumanFunction | HTMLResponse:
    """The Human Function the link opens, or the page that says why it opens none (404 / 403 /
    410, or 503 while the store cannot be reached)."""
    link = parse_form_token(token)
    if link is None:
        return page_response(render_unknown_page(nonce), nonce, 404)
    try:
        hf = await runtime.store.get(link.hf_id)
    except UnknownRequestError:
        return page_response(render_unknown_page(nonce), nonce, 404)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc, answering=answering)
    if not link.opens(hf):
        logger.warning("refused a form link with a wrong secret hf=%s channel=web", hf.id)
        return page_response(render_refused_link_page(nonce), nonce, 403)
    if _expired(runtime, hf):
        return page_response(render_expired_page(hf, nonce), nonce, 410)
    return hf


@router.get("/f/{token}", include_in_schema=False)
async def show_form(request: Request, token: str) -> Response:
    runtime = _runtime(request)
    nonce = new_nonce()
    hf = await _open(runtime, token, nonce)
    if isinstance(hf, Response):
        return hf
    hf = await runtime.service.started(hf)  # opening the form counts as starting to answer
    notice = RECORDED_NOTICE if request.query_params.get("done") == "1" and not hf.is_pending else None
    return page_response(render_page(hf, _context(runtime, hf), nonce=nonce, notice=notice), nonce)


@router.post("/f/{token}", include_in_schema=False)
async def submit_form(request: Request, token: str) -> Response:
    runtime = _runtime(request)
    nonce = new_nonce()
    channel = WebChannel()
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        channel.verify(headers, b"", runtime.service.clock(), runtime.settings)
    except SignatureError as exc:
        logger.warning("refused cross-site form post channel=web: %s", exc)
        html = render_notice_page(
            nonce,
            "This answer was not accepted.",
            "It was sent from another site. Open the form from its link and answer there.",
        )
        return page_response(html, nonce, 403)
    hf = await _open(runtime, token, nonce, answering=True)
    if isinstance(hf, Response):
        return hf
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    ctx = _context(runtime, hf)
    try:
        answer = channel.parse(hf, values)
        await runtime.service.answer(hf, answer)
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
            hf = await runtime.store.get(hf.id)
        except StoreUnavailableError as unavailable:
            return _unavailable(nonce, unavailable, answering=True)
        return page_response(
            render_page(hf, _context(runtime, hf), nonce=nonce, notice=sentence_case(str(exc))),
            nonce,
            409,
        )
    logger.info("web form answered hf=%s channel=web", hf.id)
    return RedirectResponse(f"/f/{token}?done=1", status_code=303, headers=page_headers(nonce))
