"""Secret-looking values masked in what people see (docs/permissions.md#secrets)."""

from __future__ import annotations

import pytest

from gateway.permissions.secrets import MASK, mask

SECRETS = [
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "AKIA" + MASK),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", MASK),
    ("git clone https://ada:hunter2secret@github.com/x/y", "hunter2secret", "ada:" + MASK + "@github.com"),
    ("curl -H 'Authorization: Bearer abc.def.ghijklmnop' https://x", "abc.def.ghijklmnop", "Bearer " + MASK),
    ("GH=ghp_" + "a1" * 18, "a1a1a1", "ghp_" + MASK),
    ("github_pat_" + "B" * 30, "BBBBBB", "github_pat_" + MASK),
    ("SLACK=xoxb-1234-5678-abcdefghijkl", "5678-abcdefghijkl", "xoxb-" + MASK),
    ("ANTHROPIC_API_KEY=sk-ant-api03-" + "x" * 40, "x" * 40, MASK),
    ("stripe sk_live_" + "4" * 24, "4" * 24, "sk_live_" + MASK),
    ("bot 123456789:" + "A" * 35, "A" * 35, "123456789:" + MASK),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", "MIIEabc", MASK),
    ("mysql -u root --password hunter22", "hunter22", "--password " + MASK),
    ('{"api_key": "abcd1234efgh"}', "abcd1234efgh", '"api_key": "' + MASK),
    ("token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz", "c2lnbmF0dXJlMTIz", MASK),
]


@pytest.mark.parametrize(("text", "secret", "shown"), SECRETS)
def test_a_secret_is_masked_and_what_it_is_kept(text: str, secret: str, shown: str) -> None:
    masked = mask(text)
    assert secret not in masked and shown in masked, masked


@pytest.mark.parametrize(
    "text",
    [
        "npm test",
        "git commit -m 'token handling fix'",
        "echo password reset flow",
        "ls -la /home/ada",
        "sk-1",
    ],
)
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert mask(text) == text
