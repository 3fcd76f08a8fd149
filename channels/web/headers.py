"""Security headers of the pages humangate serves (the web form, the inbox), and those pages' responses."""

from __future__ import annotations

import secrets

from starlette.responses import HTMLResponse

from schemas.errors import RETRY_AFTER_SECONDS


def new_nonce() -> str:
    """A fresh CSP nonce for one response."""
    return secrets.token_urlsafe(16)


def page_headers(nonce: str, *, connect: bool = False) -> dict[str, str]:
    """A nonce-based CSP that allows nothing but our own inline script and style, and no framing;
    ``connect`` also lets the page's script read from this origin (the inbox's live updates)."""
    connect_src = "connect-src 'self'; " if connect else ""
    csp = (
        "default-src 'none'; "
        f"{connect_src}"
        f"script-src 'nonce-{nonce}'; "
        f"style-src 'nonce-{nonce}'; "
        "img-src 'self' data:; "
        "form-action 'self'; "
        "frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    return hardened_headers(csp)


def page_response(html: str, nonce: str, status: int = 200, *, connect: bool = False) -> HTMLResponse:
    """A page with ``page_headers``; a 503 also says when to try again (``Retry-After``)."""
    headers = page_headers(nonce, connect=connect)
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return HTMLResponse(html, status_code=status, headers=headers)


def hardened_headers(csp: str) -> dict[str, str]:
    """``csp`` plus what every page of ours sends: no framing, no referrer, no caching, no MIME
    sniffing, no opener."""
    return {
        "Content-Security-Policy": csp,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
