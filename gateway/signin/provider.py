"""The organisation's OpenID Connect provider, as humangate's web sign-in uses it (docs/sign-in.md).

The authorization code flow with PKCE (S256), ``state`` and ``nonce``, through Authlib's httpx client.
The provider's metadata comes from ``<issuer>/.well-known/openid-configuration`` and is kept for
``METADATA_SECONDS``; its signing keys (JWKS) likewise, and are read again at once when an ID token
names a key we do not hold (the provider rotated its keys). An ID token is accepted only when its
signature verifies with those keys and its ``iss``, ``aud``, ``exp``, ``iat`` and ``nonce`` are
right (Authlib's ``CodeIDToken`` rules, also ``azp`` and ``at_hash``), and the person is then
``email:<email>`` only when the provider says ``email_verified: true``.

Nothing here logs a code, a token, a verifier or the client secret.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx2
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from schemas.errors import SignInError
from schemas.settings import Settings

logger = logging.getLogger(__name__)

SCOPE = "openid email profile"
"""What humangate asks the provider for: who the person is, their email and their name."""

PROVIDER_TIMEOUT_SECONDS = 10.0
"""Longest one call to the provider (discovery, keys, the token exchange) may take."""

METADATA_SECONDS = 3600.0
"""How long the provider's discovery document and signing keys are kept before being read again."""

LEEWAY_SECONDS = 60
"""Clock difference tolerated between humangate and the provider when checking ``exp`` and ``iat``."""

DEFAULT_ALGORITHMS = ["RS256"]
"""ID token signature algorithms accepted when discovery names none (OIDC's mandatory one)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who signed in, as the provider vouched for them in a verified ID token."""

    email: str
    """Their verified email, in lower case."""
    name: str
    """The name the provider shows (their email when it gives none)."""


def discovery_url(issuer: str) -> str:
    """Where the provider publishes its metadata (OpenID Connect Discovery 1.0)."""
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


class Provider:
    """One process's view of the provider: its metadata and keys, kept for ``METADATA_SECONDS``."""

    def __init__(self, settings: Settings, *, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        """``transport``: where the provider's HTTP goes (tests observe it); httpx2's, as Authlib uses
        httpx2 when it is installed (the MCP SDK requires it)."""
        assert settings.oidc_issuer and settings.oidc_client_id and settings.oidc_client_secret
        self.issuer = settings.oidc_issuer
        self.client_id = settings.oidc_client_id
        self._secret = settings.oidc_client_secret
        self.redirect_uri = settings.public_base + "/auth/callback"
        self._transport = transport
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._read_at = 0.0

    def _client(self) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(
            client_id=self.client_id,
            client_secret=self._secret.get_secret_value(),
            scope=SCOPE,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            timeout=PROVIDER_TIMEOUT_SECONDS,
            transport=self._transport,
        )

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with httpx2.AsyncClient(
                timeout=PROVIDER_TIMEOUT_SECONDS, transport=self._transport
            ) as http:
                response = await http.get(url, headers={"Accept": "application/json"})
                response.raise_for_status()
                data = response.json()
        except (httpx2.HTTPError, ValueError) as exc:
            logger.warning("sign-in provider unavailable: %s from %s: %s", what, url, type(exc).__name__)
            raise SignInError(f"the sign-in provider did not answer ({what})") from exc
        if not isinstance(data, dict):
            raise SignInError(f"the sign-in provider's {what} is not a JSON object")
        return data

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document, checked to name this issuer and the endpoints we use."""
        if self._metadata is not None and time.monotonic() - self._read_at < METADATA_SECONDS:
            return self._metadata
        data = await self._get_json(discovery_url(self.issuer), "discovery document")
        if str(data.get("issuer", "")).rstrip("/") != self.issuer.rstrip("/"):
            # OpenID Connect Discovery 1.0, section 4.3: a document for another issuer is not this one's.
            raise SignInError("the sign-in provider's discovery document names another issuer")
        for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(data.get(field), str):
                raise SignInError(f"the sign-in provider's discovery document has no {field}")
        self._metadata, self._keys, self._read_at = data, None, time.monotonic()
        return data

    async def _key_set(self, *, again: bool = False) -> KeySet:
        if self._keys is None or again:
            metadata = await self.metadata()
            keys: Any = await self._get_json(metadata["jwks_uri"], "signing keys")
            self._keys = KeySet.import_key_set(keys)
        return self._keys

    async def authorization_url(self, *, state: str, nonce: str, verifier: str) -> str:
        """Where to send the browser: the provider's sign-in page for this request (S256 challenge)."""
        metadata = await self.metadata()
        async with self._client() as client:
            url, _ = client.create_authorization_url(
                metadata["authorization_endpoint"], state=state, nonce=nonce, code_verifier=verifier
            )
        return str(url)

    async def identity(self, *, code: str, verifier: str, nonce: str) -> Identity:
        """Exchange the callback's code (with the PKCE verifier) and verify the ID token it brings."""
        metadata = await self.metadata()
        async with self._client() as client:
            try:
                token = await client.fetch_token(
                    metadata["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                )
            except Exception as exc:  # Authlib raises its OAuthError or httpx2's errors
                logger.warning("sign-in code exchange refused: %s", type(exc).__name__)
                raise SignInError("the sign-in provider refused to complete the sign-in") from exc
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise SignInError("the sign-in provider sent no ID token")
        claims = await self._verified_claims(id_token, nonce, str(token.get("access_token", "")))
        return _identity_of(claims)

    async def _verified_claims(self, id_token: str, nonce: str, access_token: str) -> dict[str, Any]:
        metadata = await self.metadata()
        algorithms = metadata.get("id_token_signing_alg_values_supported") or DEFAULT_ALGORITHMS
        registry = JWSRegistry(algorithms=[a for a in algorithms if a != "none"])
        try:
            try:
                decoded = jwt.decode(id_token, await self._key_set(), registry=registry)
            except InvalidKeyIdError:
                decoded = jwt.decode(id_token, await self._key_set(again=True), registry=registry)
            claims = CodeIDToken(
                decoded.claims,
                decoded.header,
                {
                    "iss": {"essential": True, "value": str(metadata["issuer"])},
                    "aud": {"essential": True, "value": self.client_id},
                    "exp": {"essential": True},
                },
                {"nonce": nonce, "client_id": self.client_id, "access_token": access_token or None},
            )
            claims.validate(leeway=LEEWAY_SECONDS)
        except (JoseError, ValueError) as exc:
            why = (getattr(exc, "description", "") or getattr(exc, "error", "") or type(exc).__name__).lower()
            logger.warning("refused an ID token: %s", why)
            raise SignInError(f"the ID token did not verify ({why})") from exc
        return dict(claims)


def _identity_of(claims: dict[str, Any]) -> Identity:
    """The person an ID token's claims name: only a verified email will do."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise SignInError("the sign-in provider did not give an email address")
    if claims.get("email_verified") is not True:
        raise SignInError(f"the sign-in provider has not verified the email address {email}")
    name = claims.get("name")
    return Identity(email.strip().lower(), name.strip() if isinstance(name, str) and name.strip() else email)
