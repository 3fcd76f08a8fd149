"""What every HTML page humangate serves shares: security headers, the response, and the pages
the gateway serves outside a channel's own endpoints (the operator inbox, notices, the 413 page),
built from the web channel's templates.

The gateway reaches the web form's parts through this module only, never ``channels.web`` itself.
"""

from __future__ import annotations

from channels.web.form import MAX_FORM_FIELDS
from channels.web.headers import hardened_headers, new_nonce, page_headers, page_response
from channels.web.inbox import INBOX_VIA, TrailRow, answered_by, item_of, render_inbox, render_sign_in
from channels.web.markdown import message_html, message_plain_text
from channels.web.page import (
    render_home_page,
    render_notice_page,
    render_too_large_page,
    render_unavailable_page,
)
from channels.web.post import parse_form, posted_fields, posted_reason, verify_same_origin

__all__ = [
    "INBOX_VIA",
    "MAX_FORM_FIELDS",
    "TrailRow",
    "answered_by",
    "hardened_headers",
    "item_of",
    "message_html",
    "message_plain_text",
    "new_nonce",
    "page_headers",
    "page_response",
    "parse_form",
    "posted_fields",
    "posted_reason",
    "render_home_page",
    "render_inbox",
    "render_notice_page",
    "render_sign_in",
    "render_too_large_page",
    "render_unavailable_page",
    "verify_same_origin",
]
