"""Which addresses webhooks may reach (docs/webhooks.md#private-addresses)."""

from __future__ import annotations

import ipaddress

import pytest

from gateway.core.outbound import check_url, kind_of, refused_literal


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "non-global"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_only_global_addresses_are_allowed(address: str, kind: str | None) -> None:
    assert kind_of(ipaddress.ip_address(address)) == kind


def test_a_url_is_refused_for_its_literal_or_resolved_address() -> None:
    assert refused_literal("http://[::1]:8080/x") == (
        "::1 is a loopback address; webhooks go only to public addresses "
        "(HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)"
    )
    assert refused_literal("https://93.184.216.34/x") is None
    assert refused_literal("https://hooks.example.com/x") is None  # a name: the resolver checks it
    reason, warning = check_url("http://localhost:9/x")
    assert reason is not None and reason.startswith("localhost resolves to ") and warning is None
    reason, warning = check_url("https://name.invalid/x")
    assert reason is None and warning is not None and "name.invalid does not resolve now" in warning
