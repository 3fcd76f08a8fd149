"""Security headers of the pages humangate serves (the web form, the inbox)."""

from __future__ import annotations

import secrets


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
