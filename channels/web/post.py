"""Reading what a browser posted to a form link: whether another site made it send the post (Fetch
Metadata and ``Origin``), and the answer the fields give (see ``channels.web.page`` for how the page
encodes them).

Pure functions; ``channels.web.channel`` (the ``Channel``), ``channels.web.form`` (the routes) and
``channels.pages`` (the operator inbox) use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from channels.web.page import ACTION_FIELD, FIELD_PREFIX, MAX_REASON_CHARS, REASON_FIELD
from schemas.answers import coerce_text_values
from schemas.errors import InvalidAnswerError, SignatureError
from schemas.models import Action, Answer, HumanFunction

CHANNEL = "web"
"""The channel's name, as answers name where they came from."""

ANSWERED_BY = "web form"
"""Who answered, as the web channel knows them: a capability link identifies no one."""

_SAME_SITE = frozenset({"same-origin", "none"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def verify_same_origin(headers: Mapping[str, str]) -> None:
    """Raise ``SignatureError`` for a form post another site made a browser send.

    ``headers`` has lower-case names. A browser that sends Fetch Metadata must call the post
    ``same-origin`` (or ``none``: typed by the person); then ``Origin: null`` is accepted, because our
    own page's ``Referrer-Policy: no-referrer`` makes Chromium send it on a same-origin post. Any
    other ``Origin`` must name this very host and port (``null`` without Fetch Metadata is refused).
    A post with neither header comes from a non-browser client or an old browser, which cross-site
    attacks cannot drive.
    """
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in _SAME_SITE:
        raise SignatureError(f"cross-site form post refused (Sec-Fetch-Site: {site.strip()[:40]})")
    origin = headers.get("origin")
    if origin is None:
        return
    origin = origin.strip()
    if site is not None and origin.lower() == "null":
        return
    if origin.lower() == "null":
        raise SignatureError("cross-site form post refused (Origin: null)")
    host = headers.get("host", "").strip().lower()
    if not host:
        raise SignatureError("form post refused: it has an Origin but no Host header to compare it with")
    try:
        parts = urlsplit(origin)
        origin_port = str(parts.port) if parts.port is not None else ""
    except ValueError:
        raise SignatureError("form post refused: the Origin header is not a valid origin") from None
    scheme, hostname = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in _DEFAULT_PORTS or not hostname:
        raise SignatureError("form post refused: the Origin header is not a valid origin")
    if _host_port(hostname, origin_port, scheme) != _host_port(*_split_host(host), scheme):
        raise SignatureError("cross-site form post refused (the Origin is not this site)")


def _split_host(host: str) -> tuple[str, str]:
    """``example.com:8000`` -> (``example.com``, ``8000``); IPv6 keeps its brackets off."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest.removeprefix(":")
    name, _, port = host.partition(":")
    return name, port


def _host_port(hostname: str, port: str, scheme: str) -> tuple[str, str]:
    """A comparable (host, port): the scheme's default port counts as no port."""
    port = "" if port == _DEFAULT_PORTS[scheme] else port
    return hostname.lower().rstrip("."), port


def parse_form(hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
    """Turn a posted form (name -> submitted strings) into an answer; see ``channels.web.page``.

    ``hg-action`` says what the person did. For ``accept`` each ``f.<property>`` is coerced to its
    type (``coerce_text_values``); the answer is validated against the schema later, by the
    lifecycle, as every channel's is. For ``decline`` and ``cancel`` the optional ``hg-reason`` is
    kept (stripped; at most ``MAX_REASON_CHARS``). Raises ``InvalidAnswerError``.
    """
    form = {str(key): _texts(value) for key, value in payload.items()}
    actions = form.get(ACTION_FIELD, [])
    choices = ", ".join(action.value for action in Action)
    if len(actions) != 1 or actions[0] not in {action.value for action in Action}:
        raise InvalidAnswerError({"": f"the form must say what to do: one of {choices}"})
    action = Action(actions[0])
    if action is Action.ACCEPT:
        content = coerce_text_values(hf.request_schema, posted_fields(form))
        return Answer(action=action, content=content, by=ANSWERED_BY, via=CHANNEL)
    reason = posted_reason(form).strip()
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidAnswerError(
            {REASON_FIELD: f"must be at most {MAX_REASON_CHARS} characters (got {len(reason)})"}
        )
    return Answer(action=action, reason=reason or None, by=ANSWERED_BY, via=CHANNEL)


def posted_fields(form: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The values a form post carries for the schema's properties (``f.<property>``), by property."""
    return {key[len(FIELD_PREFIX) :]: v for key, v in form.items() if key.startswith(FIELD_PREFIX)}


def posted_reason(form: Mapping[str, list[str]]) -> str:
    """The reason box of a form post, as typed."""
    return "\n".join(form.get(REASON_FIELD, []))


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return [str(value)]
