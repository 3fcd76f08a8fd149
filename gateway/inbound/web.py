"""The hosted web form: ``GET /f/{token}`` renders, ``POST /f/{token}`` answers.

The token is a capability (id + 192-bit secret); it is never logged (only the id is). A GET never
records anything. A POST is refused when it comes from another site.

What a link gets (every page has the form pages' look, CSP and headers, and needs no JavaScript):

| the link | GET | POST |
| --- | --- | --- |
| not shaped like a token humangate issues | 404 | 404 |
| well-formed, but no such request (never created, or gone a day after it ended) | 404 | 404 |
| the request exists, the secret is wrong | 403 | 403 |
| right secret, request expired (status expired, or its deadline passed) | 410 | 410 |
| right secret, request answered, declined or canceled | 200, the outcome | 409, "already ... by X" |
| right secret, request pending | 200, the form | 303 to the outcome, or 422 with the errors |

A malformed token and an unknown id are both 404: neither names a request humangate can find, and
Redis keeps no trace of a request a day after it ended, so "gone" (410) could not be told from
"never existed". 410 is kept for what humangate knows: this request expired. A wrong secret is 403:
the request exists but the link does not open it (cut short or changed on its way).
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from channels.base import RenderContext
from channels.display import sentence_case
from channels.web.channel import WebChannel, render_page, render_unknown_page
from channels.web.page import render_expired_page, render_notice_page, render_refused_link_page
from gateway.links import form_url, parse_form_token
from gateway.runtime import Runtime
from gateway.security import new_nonce, page_headers
from schemas.errors import (
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    SignatureError,
    UnknownRequestError,
)
from schemas.models import HumanFunction, Status

logger = logging.getLogger(__name__)

router = APIRouter()

MAX_FORM_FIELDS = 200
"""Most fields one form post may carry (32 properties x a multi-select's options fit)."""

RECORDED_NOTICE = "Your answer was recorded. You can close this page."


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _page(html: str, nonce: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status_code=status, headers=page_headers(nonce))


def _context(runtime: Runtime, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=form_url(runtime.settings, hf), now=runtime.service.clock())


def _expired(runtime: Runtime, hf: HumanFunction) -> bool:
    """Expired, or past its deadline and not yet ended by the reaper."""
    return hf.status is Status.EXPIRED or (hf.is_pending and runtime.service.clock() >= hf.deadline)


async def _open(runtime: Runtime, token: str, nonce: str) -> HumanFunction | HTMLResponse:
    """The Human Function the link opens, or the page that says why it opens none (404 / 403 / 410)."""
    link = parse_form_token(token)
    if link is None:
        return _page(render_unknown_page(nonce), nonce, 404)
    try:
        hf = await runtime.store.get(link.hf_id)
    except UnknownRequestError:
        return _page(render_unknown_page(nonce), nonce, 404)
    if not link.opens(hf):
        logger.warning("refused a form link with a wrong secret hf=%s channel=web", hf.id)
        return _page(render_refused_link_page(nonce), nonce, 403)
    if _expired(runtime, hf):
        return _page(render_expired_page(hf, nonce), nonce, 410)
    return hf


@router.get("/f/{token}", include_in_schema=False)
async def show_form(request: Request, token: str) -> Response:
    runtime = _runtime(request)
    nonce = new_nonce()
    hf = await _open(runtime, token, nonce)
    if isinstance(hf, Response):
        return hf
    notice = RECORDED_NOTICE if request.query_params.get("done") == "1" and not hf.is_pending else None
    return _page(render_page(hf, _context(runtime, hf), nonce=nonce, notice=notice), nonce)


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
        return _page(html, nonce, 403)
    hf = await _open(runtime, token, nonce)
    if isinstance(hf, Response):
        return hf
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    ctx = _context(runtime, hf)
    try:
        answer = channel.parse(hf, values)
        await runtime.service.answer(hf, answer)
    except InvalidAnswerError as exc:
        fields = {key.removeprefix("f."): v for key, v in values.items() if key.startswith("f.")}
        reason = "\n".join(values.get("hg-reason", []))
        html = render_page(hf, ctx, nonce=nonce, values=fields, errors=exc.errors, reason=reason)
        return _page(html, nonce, 422)
    except ExpiredError:
        return _page(render_expired_page(hf, nonce), nonce, 410)
    except ClosedError as exc:
        hf = await runtime.store.get(hf.id)
        return _page(
            render_page(hf, _context(runtime, hf), nonce=nonce, notice=sentence_case(str(exc))), nonce, 409
        )
    logger.info("web form answered hf=%s channel=web", hf.id)
    return RedirectResponse(f"/f/{token}?done=1", status_code=303, headers=page_headers(nonce))
