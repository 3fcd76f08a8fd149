"""The front page at ``/``: what a person who opens the gateway's address expects, links to the
inbox, the REST API's docs and health (rather than a JSON 404)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from channels.pages import new_nonce, page_response, render_home_page

router = APIRouter(include_in_schema=False)


@router.get("/")
async def home() -> HTMLResponse:
    """A short HTML page linking the inbox, ``/docs`` and ``/healthz``."""
    nonce = new_nonce()
    return page_response(render_home_page(nonce), nonce)
