"""Bot Framework JWTs checked without a network, against keys installed by hand, at chosen times."""

from __future__ import annotations

import json
from typing import Any

import jwt
import pytest

from channels.teams.auth import (
    KEYS_MAX_AGE,
    MAX_REMEMBERED_KIDS,
    REFRESH_INTERVAL,
    SigningKeys,
    UnknownKeyError,
    verify_activity,
)
from schemas.errors import SignatureError
from tests.fakes.teams import APP_ID, ISSUER, KID, OTHER_KEY, SIGNING_KEY, jwk_of

NOW = 1_790_000_000
SERVICE = "https://smba.trafficmanager.net/emea/"
ACTIVITY = {"type": "message", "id": "1", "channelId": "msteams", "serviceUrl": SERVICE}
METADATA = {"issuer": ISSUER, "jwks_uri": "https://keys", "id_token_signing_alg_values_supported": ["RS256"]}


def keys(*jwks: dict[str, Any], at: float = NOW) -> SigningKeys:
    loaded = SigningKeys()
    loaded.replace(METADATA, {"keys": list(jwks) or [jwk_of(SIGNING_KEY, KID)]}, KID, at)
    return loaded


def token(key: Any = SIGNING_KEY, kid: str = KID, **claims: Any) -> str:
    body = {"iss": ISSUER, "aud": APP_ID, "nbf": NOW - 5, "exp": NOW + 3600, "serviceurl": SERVICE} | claims
    return jwt.encode(
        {k: v for k, v in body.items() if v is not None}, key, algorithm="RS256", headers={"kid": kid}
    )


def check(
    raw: str, activity: dict[str, Any] = ACTIVITY, at: float = NOW, loaded: SigningKeys | None = None
) -> Any:
    headers = {"authorization": f"Bearer {raw}"}
    return verify_activity(headers, json.dumps(activity).encode(), loaded or keys(), APP_ID, at)


def test_a_token_as_bot_framework_signs_it_is_accepted_with_its_claims() -> None:
    verified = check(token())
    assert verified.activity == ACTIVITY and verified.claims["serviceurl"] == SERVICE
    assert verified.expires == NOW + 3600 + 300
    assert check(token(serviceurl=SERVICE.rstrip("/"))).claims["aud"] == APP_ID


@pytest.mark.parametrize(
    ("raw", "at", "expected"),
    [
        (token(exp=NOW - 301), NOW, "expired"),
        (token(exp=NOW - 299), NOW, ""),
        (token(nbf=NOW + 301), NOW, "not valid yet"),
        (token(nbf=NOW + 299), NOW, ""),
        (token(exp="tomorrow"), NOW, "exp claim is not a time"),
        (token(aud=f"api://{APP_ID}"), NOW, "audience"),
        (token(iss="https://sts.windows.net/x/"), NOW, "issuer"),
        (token(serviceurl="https://evil.example/"), NOW, "serviceurl claim is not"),
        (token(key=OTHER_KEY), NOW, "signature does not verify"),
        (token(kid="other"), NOW, "is not in the JWKS"),
    ],
)
def test_the_claims_and_times(raw: str, at: float, expected: str) -> None:
    if not expected:
        check(raw, at=at)
        return
    with pytest.raises(SignatureError, match=expected):
        check(raw, at=at)


def test_only_rs256_and_only_endorsed_keys() -> None:
    hmac = jwt.encode({"aud": APP_ID}, "k" * 64, algorithm="HS256", headers={"kid": KID})
    with pytest.raises(SignatureError, match="only RS256"):
        check(hmac)
    rs512 = jwt.encode({"aud": APP_ID}, SIGNING_KEY, algorithm="RS512", headers={"kid": KID})
    with pytest.raises(SignatureError, match="only RS256"):
        check(rs512)
    with pytest.raises(SignatureError, match="names no key"):
        check(jwt.encode({"aud": APP_ID}, SIGNING_KEY, algorithm="RS256"))
    with pytest.raises(SignatureError, match="not endorsed for channel 'msteams'"):
        check(token(), loaded=keys(jwk_of(SIGNING_KEY, KID, endorsements=["webchat"])))
    no_rs256 = SigningKeys()
    no_rs256.replace(
        METADATA | {"id_token_signing_alg_values_supported": ["ES256"]},
        {"keys": [jwk_of(SIGNING_KEY, KID)]},
        KID,
        NOW,
    )
    with pytest.raises(SignatureError, match="does not list RS256"):
        check(token(), loaded=no_rs256)


def test_keys_are_fetched_when_missing_stale_or_once_per_unknown_kid() -> None:
    loaded = SigningKeys()
    assert loaded.should_fetch(KID, NOW)
    loaded.replace(METADATA, {"keys": [jwk_of(SIGNING_KEY, KID)]}, KID, NOW)
    assert not loaded.should_fetch(KID, NOW + 1)
    assert not loaded.should_fetch("new", NOW + REFRESH_INTERVAL - 1)  # too soon after a fetch
    assert loaded.should_fetch("new", NOW + REFRESH_INTERVAL)
    loaded.replace(METADATA, {"keys": [jwk_of(SIGNING_KEY, KID)]}, "new", NOW + REFRESH_INTERVAL)
    assert not loaded.should_fetch("new", NOW + 10 * REFRESH_INTERVAL)  # fetched once for it already
    assert loaded.should_fetch("newer", NOW + 10 * REFRESH_INTERVAL)
    assert loaded.should_fetch(KID, NOW + REFRESH_INTERVAL + KEYS_MAX_AGE + 1)  # old keys are refreshed
    for index in range(MAX_REMEMBERED_KIDS + 10):
        loaded.replace(METADATA, {"keys": []}, f"k{index}", NOW)
    assert len(loaded.tried) == MAX_REMEMBERED_KIDS and "k0" not in loaded.tried


def test_a_rotated_key_verifies_once_fetched() -> None:
    loaded = keys()
    rotated = token(key=OTHER_KEY, kid="rotated")
    with pytest.raises(UnknownKeyError):
        check(rotated, loaded=loaded)
    loaded.replace(METADATA, {"keys": [jwk_of(OTHER_KEY, "rotated")]}, "rotated", NOW + REFRESH_INTERVAL)
    assert check(rotated, loaded=loaded).claims["aud"] == APP_ID


def test_metadata_without_an_issuer_or_keys_is_refused() -> None:
    with pytest.raises(SignatureError, match="no issuer"):
        SigningKeys().replace({"jwks_uri": "x"}, {"keys": []}, KID, NOW)
    with pytest.raises(SignatureError, match="no keys list"):
        SigningKeys().replace(METADATA, {"nokeys": 1}, KID, NOW)


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({}, b"{}", "missing"),
        ({"authorization": "Bearer"}, b"{}", "Bearer <token>"),
        ({"authorization": "Bearer a.b"}, b"{}", "not a JWT"),
        ({"authorization": f"Bearer {token()}"}, b"[1]", "not a JSON object"),
        ({"authorization": f"Bearer {token()}"}, b"\xff", "not JSON"),
    ],
)
def test_malformed_requests(headers: dict[str, str], body: bytes, expected: str) -> None:
    with pytest.raises(SignatureError, match=expected):
        verify_activity(headers, body, keys(), APP_ID, NOW)
