"""Sign-in to the web form through the organisation's OpenID Connect provider (docs/sign-in.md).

``signed_in_person(request)`` is the one question the web form and the inbox ask: who is signed in
in this browser (``email:<verified email>``), or ``None``.
"""

from gateway.signin.routes import router, sign_in_url, signed_in_person

__all__ = ["router", "sign_in_url", "signed_in_person"]
