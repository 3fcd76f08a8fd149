"""The rule "Allow for this session" adds (docs/permissions.md#allow-for-this-session)."""

from __future__ import annotations

from gateway.permissions.prompt import session_title


def test_the_button_names_the_rule_unless_it_is_too_long() -> None:
    assert session_title(("Bash", "npm test")) == "Allow for this session: Bash(npm test)"
    assert session_title(("mcp__github__x", None)) == "Allow for this session: mcp__github__x"
    assert session_title(("Bash", "x" * 80)) == "Allow for this session"
