"""The hosted web form: ``GET /f/{token}`` renders, ``POST /f/{token}`` answers.

The token is a capability (id + 192-bit secret); it is never logged (only the id is). A GET never
records anything. A POST is refused when it comes from another site.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from channels.base import RenderContext
from channels.display import sentence_case
from channels.web.channel import WebChannel, render_page, render_unavailable_page, render_unknown_page
from gateway.errors import RETRY_AFTER_SECONDS
from gateway.links import form_url
from gateway.runtime import Runtime
from gateway.security import new_nonce, page_headers
from schemas.errors import (
    ClosedError,
    InvalidAnswerError,
    SignatureError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import HumanFunction

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


def _page(html: str, nonce: str, status: int = 200) -> HTMLResponse:
    headers = page_headers(nonce)
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return HTMLResponse(html, status_code=status, headers=headers)


def _unavailable(nonce: str, exc: StoreUnavailableError, *, answering: bool = False) -> HTMLResponse:
    logger.warning("form page unavailable: %s", exc)
    return _page(render_unavailable_page(nonce, answering=answering), nonce, 503)


def _context(runtime: Runtime, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=form_url(runtime.settings, hf), now=runtime.service.clock())


@router.get("/f/{token}", include_in_schema=False)
async def show_form(request: Request, token: str) -> Response:
    runtime = _runtime(request)
    nonce = new_nonce()
    try:
        hf = await runtime.store.get_by_token(token)
    except UnknownRequestError:
        return _page(render_unknown_page(nonce), nonce, 404)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc)
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
        logger.warning("refused cross-site form post: %s", exc)
        return Response(f"Forbidden: {exc}", status_code=403, media_type="text/plain")
    try:
        hf = await runtime.store.get_by_token(token)
    except UnknownRequestError:
        return _page(render_unknown_page(nonce), nonce, 404)
    except StoreUnavailableError as exc:
        return _unavailable(nonce, exc, answering=True)
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    values = {key: [str(v) for v in form.getlist(key)] for key in form}
    ctx = _context(runtime, hf)
    try:
        answer = channel.parse(hf, values)
        await runtime.service.answer(hf, answer)
    except InvalidAnswerError as exc:
        html = render_page(
            hf, ctx, nonce=nonce, values=_fields(values), errors=exc.errors, reason=_reason(values)
        )
        return _page(html, nonce, 422)
    except StoreUnavailableError as exc:
        logger.warning("form answer not saved hf=%s channel=web: %s", hf.id, exc)
        html = render_page(
            hf, ctx, nonce=nonce, values=_fields(values), reason=_reason(values), notice=NOT_SAVED_NOTICE
        )
        return _page(html, nonce, 503)
    except ClosedError as exc:
        try:
            hf = await runtime.store.get(hf.id)
        except StoreUnavailableError as unavailable:
            return _unavailable(nonce, unavailable, answering=True)
        return _page(
            render_page(hf, _context(runtime, hf), nonce=nonce, notice=sentence_case(str(exc))), nonce, 409
        )
    logger.info("web form answered hf=%s channel=web", hf.id)
    return RedirectResponse(f"/f/{token}?done=1", status_code=303, headers=page_headers(nonce))


def _fields(values: dict[str, list[str]]) -> dict[str, list[str]]:
    """The form's field values as posted, to show them again."""
    return {key.removeprefix("f."): v for key, v in values.items() if key.startswith("f.")}


def _reason(values: dict[str, list[str]]) -> str:
    return "\n".join(values.get("hg-reason", []))
