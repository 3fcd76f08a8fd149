"""The web sign-in settings: all three OIDC settings or none, an https issuer (http on loopback only),
and ``HUMANGATE_WEB_SIGN_IN=required`` only with a provider; each refusal names the setting."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas.settings import Settings

CLIENT: dict[str, Any] = {"oidc_client_id": "humangate", "oidc_client_secret": "s3cret"}


def test_without_the_settings_sign_in_is_off() -> None:
    settings = Settings(_env_file=None)
    assert not settings.oidc_enabled and settings.web_sign_in == "optional"


@pytest.mark.parametrize(
    "issuer", ["https://login.example.com", "http://127.0.0.1:9400", "http://localhost:1"]
)
def test_an_https_or_loopback_issuer_enables_sign_in(issuer: str) -> None:
    settings = Settings(_env_file=None, oidc_issuer=issuer, web_sign_in="required", **CLIENT)
    assert settings.oidc_enabled
    assert settings.oidc_client_secret is not None and "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (
            {"oidc_issuer": "https://login.example.com"},
            "HUMANGATE_OIDC_CLIENT_ID, HUMANGATE_OIDC_CLIENT_SECRET",
        ),
        ({"oidc_client_id": "humangate"}, "HUMANGATE_OIDC_ISSUER, HUMANGATE_OIDC_CLIENT_SECRET"),
        ({"oidc_issuer": "http://login.example.com", **CLIENT}, "HUMANGATE_OIDC_ISSUER must be an https://"),
        ({"oidc_issuer": "ftp://login.example.com", **CLIENT}, "HUMANGATE_OIDC_ISSUER must be an https://"),
        ({"oidc_issuer": "https://login.example.com?x=1", **CLIENT}, "without a query"),
        ({"web_sign_in": "required"}, "HUMANGATE_WEB_SIGN_IN=required needs HUMANGATE_OIDC_ISSUER"),
        ({"web_sign_in": "always"}, "web_sign_in"),
    ],
)
def test_a_wrong_combination_is_refused_naming_the_setting(values: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError, match=named.replace("?", r"\?")):
        Settings(_env_file=None, **values)
