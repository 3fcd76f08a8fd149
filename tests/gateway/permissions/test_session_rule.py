"""The rule "Allow for this session" adds (docs/permissions.md#allow-for-this-session)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.mcp.approval_prompt import session_title
from gateway.permissions.session_rule import session_rule


@pytest.mark.parametrize(
    ("tool", "call_input", "rule"),
    [
        ("Bash", {"command": " npm test "}, ("Bash", "npm test")),
        ("Bash", {"command": ""}, None),
        ("Edit", {"file_path": "/r/a.py", "old_string": "a", "new_string": "b"}, ("Edit", "/r/a.py")),
        ("Write", {"file_path": "/r/b.py", "content": ""}, ("Write", "/r/b.py")),
        ("Read", {"file_path": "/etc/hosts"}, ("Read", "/etc/hosts")),
        ("NotebookEdit", {"notebook_path": "/n.ipynb"}, ("NotebookEdit", "/n.ipynb")),
        (
            "WebFetch",
            {"url": "https://docs.python.org/3/", "prompt": "x"},
            ("WebFetch", "domain:docs.python.org"),
        ),
        ("WebFetch", {"url": "not a url"}, None),
        ("mcp__github__delete_repository", {"repo": "a/b"}, ("mcp__github__delete_repository", None)),
        ("mcp__github", {}, None),
        ("WebSearch", {"query": "x"}, None),
    ],
)
def test_the_rule_of_each_tool(
    tool: str, call_input: dict[str, Any], rule: tuple[str, str | None] | None
) -> None:
    assert session_rule(tool, call_input) == rule


def test_the_button_names_the_rule_unless_it_is_too_long() -> None:
    assert session_title(("Bash", "npm test")) == "Allow for this session: Bash(npm test)"
    assert session_title(("mcp__github__x", None)) == "Allow for this session: mcp__github__x"
    assert session_title(("Bash", "x" * 80)) == "Allow for this session"
