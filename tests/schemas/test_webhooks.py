"""The ``[[webhooks]]`` tables of the policy file (docs/webhooks.md#configuring) and the retry
schedule setting: what is accepted, and each mistake named by line and field without the secret."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas.policies import PolicyFileError, parse_policies
from schemas.settings import DEFAULT_WEBHOOK_RETRY_SCHEDULE, Settings
from schemas.webhooks import EVENT_TYPES
from tests.webhook_receiver import SECRET

WRONG_SECRET = "whsec_c2hvcnQ="
"""Base64 of a 5-byte key: too short."""


def test_webhooks_are_read_in_file_order_with_their_events() -> None:
    policies = parse_policies(
        f"""\
[policies.deploys]
timeout = 60

[[webhooks]]
url = "https://hooks.example.com/a"
secret = "{SECRET}"
events = ["request.created", "request.ended"]

[[webhooks]]
url = "https://hooks.example.com/b"
secret = "{SECRET}"
"""
    )
    first, second = policies.webhooks
    assert (first.url, first.events) == ("https://hooks.example.com/a", ["request.created", "request.ended"])
    assert second.events == list(EVENT_TYPES) and second.wants("request.escalated")
    assert first.secret.get_secret_value() == SECRET
    assert SECRET not in repr(policies) and SECRET not in first.describe()
    assert policies.names == ["deploys"]


def test_each_mistake_names_its_line_and_field_and_never_the_secret() -> None:
    text = f"""\
[[webhooks]]
url = "https://hooks.example.com/a"
secret = "{SECRET}"

[[webhooks]]
url = "ftp://hooks.example.com/a"
secret = "{WRONG_SECRET}"
events = ["request.created", "request.bogus"]
colour = "red"

[[webhooks]]
secret = "{SECRET}"
url = "https://hooks.example.com/a"
"""
    with pytest.raises(PolicyFileError) as raised:
        parse_policies(text, "humangate.toml")
    assert [str(m) for m in raised.value.mistakes] == [
        "line 6: webhooks[1].url: 'ftp://hooks.example.com/a' is not an http:// or https:// URL"
        " (https is recommended)",
        "line 7: webhooks[1].secret: must hold a key of 24 to 64 bytes (got 5)",
        "line 8: webhooks[1].events[1]: 'request.bogus' is not an event; the events are "
        + ", ".join(EVENT_TYPES),
        "line 9: webhooks[1].colour: is not a webhook setting; the settings are url, secret, events",
        "line 13: webhooks[2].url: 'https://hooks.example.com/a' is the URL of an earlier webhook",
    ]
    assert WRONG_SECRET not in str(raised.value) and SECRET not in str(raised.value)


@pytest.mark.parametrize(
    ("secret", "rule"),
    [
        ("c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0", "must start with whsec_ (a Standard Webhooks secret)"),
        ("whsec_not base64!", "must be whsec_ followed by base64"),
    ],
)
def test_a_secret_must_be_a_standard_webhooks_secret(secret: str, rule: str) -> None:
    with pytest.raises(PolicyFileError) as raised:
        parse_policies(f'[[webhooks]]\nurl = "https://a.example.com"\nsecret = "{secret}"\n')
    assert [str(m) for m in raised.value.mistakes] == [f"line 3: webhooks[0].secret: {rule}"]
    assert secret not in str(raised.value)


def test_url_and_secret_are_required() -> None:
    with pytest.raises(PolicyFileError) as raised:
        parse_policies('[[webhooks]]\nevents = ["request.ended"]\n')
    assert [str(m) for m in raised.value.mistakes] == [
        "line 1: webhooks[0].secret: is required",
        "line 1: webhooks[0].url: is required",
    ]


def test_the_default_retry_schedule_spans_more_than_a_day() -> None:
    settings = Settings.model_validate({})
    assert settings.webhook_retry_schedule == list(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
    assert sum(settings.webhook_retry_schedule) >= 24 * 3600
    assert settings.webhook_allow_private is False


def test_the_retry_schedule_is_read_comma_separated_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMANGATE_WEBHOOK_RETRY_SCHEDULE", "1, 2.5,60")
    assert Settings(_env_file=None).webhook_retry_schedule == [1.0, 2.5, 60.0]
    for wrong in ("1,soon", "0,5", "-1"):
        monkeypatch.setenv("HUMANGATE_WEBHOOK_RETRY_SCHEDULE", wrong)
        with pytest.raises(ValidationError, match="webhook_retry_schedule"):
            Settings(_env_file=None)
