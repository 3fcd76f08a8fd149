"""Security headers of the pages humangate serves (the web form)."""

from __future__ import annotations

import secrets


def new_nonce() -> str:
    """A fresh CSP nonce for one response."""
    return secrets.token_urlsafe(16)


def page_headers(nonce: str) -> dict[str, str]:
    """A nonce-based CSP that allows nothing but our own inline script and style, and no framing."""
    csp = (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}'; "
        f"style-src 'nonce-{nonce}'; "
        "img-src 'self' data:; "
        "form-action 'self'; "
        "frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    return {
        "Content-Security-Policy": csp,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
