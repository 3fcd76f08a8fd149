"""Where ``serve``'s form links point: ``HUMANGATE_PUBLIC_URL``, else the address it listens on
(the processes themselves are in tests/gateway/test_cli.py)."""

from __future__ import annotations

import logging

import pytest

from gateway.serve import bound_url, with_public_url
from schemas.settings import Settings


@pytest.fixture(autouse=True)
def no_public_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the shell running the tests sets, ``Settings()`` here has no public URL."""
    monkeypatch.delenv("HUMANGATE_PUBLIC_URL", raising=False)


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8123, "http://127.0.0.1:8123"),
        ("192.0.2.7", 8000, "http://192.0.2.7:8000"),
        ("0.0.0.0", 9000, "http://127.0.0.1:9000"),
        ("::", 9000, "http://[::1]:9000"),
        ("::1", 8123, "http://[::1]:8123"),
    ],
)
def test_links_name_the_address_serve_listens_on(host: str, port: int, url: str) -> None:
    assert bound_url(host, port) == url
    assert with_public_url(Settings(), host, port).public_url == url


def test_a_wildcard_address_says_that_the_public_url_should_be_set(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="gateway.serve"):
        with_public_url(Settings(), "0.0.0.0", 8000)
    assert [r.getMessage() for r in caplog.records] == [
        "form links start with http://127.0.0.1:8000 (HUMANGATE_PUBLIC_URL is not set): set it to the "
        "address people reach this machine at"
    ]


def test_a_public_url_set_is_kept_and_a_different_one_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="gateway.serve"):
        same = with_public_url(Settings(public_url="http://127.0.0.1:8123/"), "127.0.0.1", 8123)
        assert caplog.records == []
        proxied = with_public_url(Settings(public_url="https://humangate.example"), "127.0.0.1", 8123)
    assert same.public_url == "http://127.0.0.1:8123/"
    assert proxied.public_url == "https://humangate.example"
    assert [r.getMessage() for r in caplog.records] == [
        "form links start with HUMANGATE_PUBLIC_URL https://humangate.example, not http://127.0.0.1:8123 "
        "where serve listens"
    ]
