"""Bot Framework's JWTs on inbound activities, checked as Microsoft specifies (pure: no I/O).

The Bot Connector signs every activity it posts to ``/teams/messages`` with a JWT in
``Authorization: Bearer``. ``verify_activity`` accepts it only when

- the header says ``RS256`` (nothing else, never ``none`` or an HMAC) and names a ``kid`` that the
  JWKS of ``HUMANGATE_TEAMS_OPENID_URL`` lists, and that key is endorsed for the activity's channel;
- the signature verifies with that key;
- ``iss`` is the issuer of the OpenID metadata, ``aud`` is ``TEAMS_APP_ID``;
- ``exp`` (required) and ``nbf`` hold at ``now`` give or take ``CLOCK_SKEW_SECONDS``;
- the ``serviceurl`` claim is the activity's ``serviceUrl``, so a token cannot steer replies elsewhere.

PyJWT does the signature (with the key from ``PyJWK``); times are checked here against the caller's
injectable clock. ``SigningKeys`` holds the metadata and keys one process fetched (the fetching is
``channels.teams.connector``'s) and decides when fetching again is allowed: when the keys are older
than ``KEYS_MAX_AGE``, or once per ``kid`` it has not seen, at most every ``REFRESH_INTERVAL``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt

from schemas.errors import InvalidJsonError, SignatureError
from schemas.json_text import read_json

ALGORITHM = "RS256"
"""The only signing algorithm Bot Framework uses and the only one accepted."""

CLOCK_SKEW_SECONDS = 300
"""How far ``exp`` and ``nbf`` may be off: Microsoft's five minutes."""

KEYS_MAX_AGE = 24 * 3600
"""Seconds fetched keys are used before they are fetched again (Microsoft rotates them)."""

REFRESH_INTERVAL = 30.0
"""Shortest time between two fetches caused by unknown ``kid``s, so forged tokens cannot make the
gateway hammer the OpenID endpoint."""

MAX_REMEMBERED_KIDS = 256
"""Unknown ``kid``s remembered (each fetched for once); the oldest is forgotten past this."""


class UnknownKeyError(SignatureError):
    """The token names a ``kid`` the fetched keys do not list."""


@dataclass
class SigningKeys:
    """The OpenID metadata and JWKS one gateway process verifies tokens with."""

    issuer: str = ""
    algorithms: tuple[str, ...] = ()
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    fetched_at: float = -math.inf
    tried: dict[str, float] = field(default_factory=dict)
    """Unknown ``kid``s that already caused a fetch, with when."""

    def should_fetch(self, kid: str, now: float) -> bool:
        """Whether verifying a token with ``kid`` at ``now`` needs (and may have) fresh keys."""
        if not self.keys or now - self.fetched_at > KEYS_MAX_AGE:
            return True
        if kid in self.keys or kid in self.tried:
            return False
        return now - self.fetched_at >= REFRESH_INTERVAL

    def replace(self, metadata: Mapping[str, Any], jwks: Mapping[str, Any], kid: str, now: float) -> None:
        """Install freshly fetched metadata and keys (``kid`` is the one that asked for them)."""
        issuer = metadata.get("issuer")
        if not isinstance(issuer, str) or not issuer:
            raise SignatureError("the OpenID metadata names no issuer")
        algorithms = metadata.get("id_token_signing_alg_values_supported")
        listed = jwks.get("keys")
        if not isinstance(listed, list):
            raise SignatureError("the JWKS of the OpenID metadata has no keys list")
        self.issuer = issuer
        self.algorithms = tuple(str(a) for a in algorithms) if isinstance(algorithms, list) else ()
        self.keys = {str(k["kid"]): dict(k) for k in listed if isinstance(k, Mapping) and k.get("kid")}
        self.fetched_at = now
        if kid and kid not in self.keys:
            self.tried[kid] = now
            while len(self.tried) > MAX_REMEMBERED_KIDS:
                del self.tried[next(iter(self.tried))]


@dataclass(frozen=True, slots=True)
class Verified:
    """An authentic activity: its JSON and the token's claims."""

    activity: dict[str, Any]
    claims: dict[str, Any]

    @property
    def expires(self) -> float:
        """When the token stops being accepted (its ``exp`` plus the skew)."""
        return float(self.claims["exp"]) + CLOCK_SKEW_SECONDS


def bearer_token(headers: Mapping[str, str]) -> str:
    """The JWT of ``Authorization: Bearer <jwt>`` (``headers`` has lower-case names)."""
    value = headers.get("authorization", "").strip()
    scheme, _, token = value.partition(" ")
    if not value:
        raise SignatureError("the Authorization header is missing")
    if scheme.lower() != "bearer" or not token.strip():
        raise SignatureError("the Authorization header must be 'Bearer <token>'")
    return token.strip()


def key_id(token: str) -> str:
    """The ``kid`` of a token's header, checked to be an RS256 token first."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise SignatureError("the bearer token is not a JWT") from None
    if header.get("alg") != ALGORITHM:
        raise SignatureError(f"the token is signed with {header.get('alg')!r}; only {ALGORITHM} is accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise SignatureError("the token header names no key (kid)")
    return kid


def read_activity(body: bytes) -> dict[str, Any]:
    """The activity JSON of a request body (needed to check the token's ``serviceurl``)."""
    try:
        activity = read_json(body)
    except InvalidJsonError as exc:
        # "not JSON" first, as before the bounded reader, then the rule it broke.
        raise SignatureError(
            f"the body is not JSON (it {exc.rule}), so it is not a Bot Framework activity"
        ) from None
    if not isinstance(activity, dict):
        raise SignatureError("the body is not a JSON object, so it is not a Bot Framework activity")
    return activity


def verify_activity(
    headers: Mapping[str, str], body: bytes, keys: SigningKeys, app_id: str, now: float
) -> Verified:
    """The activity and claims of an authentic request; ``SignatureError`` naming the rule otherwise."""
    token = bearer_token(headers)
    kid = key_id(token)
    activity = read_activity(body)
    if keys.algorithms and ALGORITHM not in keys.algorithms:
        raise SignatureError(f"the OpenID metadata does not list {ALGORITHM}")
    jwk = keys.keys.get(kid)
    if jwk is None:
        raise UnknownKeyError(f"the token's key {kid!r} is not in the JWKS of the OpenID metadata")
    endorsements = jwk.get("endorsements")
    channel_id = activity.get("channelId")
    if isinstance(endorsements, list) and channel_id not in endorsements:
        raise SignatureError(f"the key {kid!r} is not endorsed for channel {channel_id!r}")
    try:
        key = jwt.PyJWK(jwk, algorithm=ALGORITHM).key
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=app_id,
            issuer=keys.issuer,
            options={
                "require": ["exp", "iss", "aud"],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
    except jwt.InvalidAudienceError:
        raise SignatureError("the token's audience (aud) is not TEAMS_APP_ID") from None
    except jwt.InvalidIssuerError:
        raise SignatureError(f"the token's issuer (iss) is not {keys.issuer}") from None
    except jwt.MissingRequiredClaimError as exc:
        raise SignatureError(f"the token has no {exc.claim} claim") from None
    except jwt.InvalidSignatureError:
        raise SignatureError("the token's signature does not verify with its key") from None
    except (jwt.PyJWTError, ValueError, TypeError) as exc:  # a malformed key or token part
        raise SignatureError(f"the token is invalid ({type(exc).__name__})") from None
    _check_times(claims, now)
    _check_service_url(claims, activity)
    return Verified(activity, claims)


def _check_times(claims: Mapping[str, Any], now: float) -> None:
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if not isinstance(exp, int | float) or not _is_time(exp):
        raise SignatureError("the token's exp claim is not a time")
    if now > exp + CLOCK_SKEW_SECONDS:
        raise SignatureError("the token expired (exp, with 5 minutes of clock skew)")
    if nbf is not None and (not _is_time(nbf) or now < nbf - CLOCK_SKEW_SECONDS):
        raise SignatureError("the token is not valid yet (nbf, with 5 minutes of clock skew)")


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_service_url(claims: Mapping[str, Any], activity: Mapping[str, Any]) -> None:
    claimed, actual = claims.get("serviceurl"), activity.get("serviceUrl")
    if not isinstance(claimed, str) or not claimed:
        raise SignatureError("the token has no serviceurl claim")
    if not isinstance(actual, str) or claimed.rstrip("/") != actual.rstrip("/"):
        raise SignatureError("the token's serviceurl claim is not the activity's serviceUrl")
