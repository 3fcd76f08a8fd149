"""Each tool kind of a permission prompt shown on every surface (docs/permissions.md#what-a-person-sees):
what each channel renders holds the call's telling words, the buttons, and never a secret."""

from __future__ import annotations

import json
from typing import Any

import pytest

from channels.base import RenderContext
from channels.registry import CHANNELS
from gateway.permissions.describe import describe_call
from gateway.permissions.prompt import decision_schema, session_title
from schemas.models import HumanFunction
from schemas.tool_rules import session_rule

SECRET = "AKIA" + "Z" * 16
CALLS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "Bash",
        {"command": f"AWS_ACCESS_KEY_ID={SECRET} git push origin main", "description": "Push it"},
        ("push", "origin"),
    ),
    (
        "Edit",
        {"file_path": "/repo/app.yaml", "old_string": "replicas: 2", "new_string": "replicas: 4"},
        ("replicas", "app.yaml"),
    ),
    (
        "Write",
        {"file_path": "/repo/notes.txt", "content": "first line\nsecond line"},
        ("notes.txt", "second line"),
    ),
    ("Read", {"file_path": "/etc/hosts", "offset": 10, "limit": 5}, ("hosts", "lines 10 to 14")),
    (
        "WebFetch",
        {"url": "https://docs.python.org/3/", "prompt": "Summarise"},
        ("docs.python.org", "Summarise"),
    ),
    ("WebSearch", {"query": "python release"}, ("python release",)),
    ("Task", {"description": "Review", "prompt": "Look for bugs"}, ("Review", "Look for bugs")),
    ("mcp__github__delete_repository", {"repo": "acme/site"}, ("delete", "github", "acme/site")),
    ("NotebookEdit", {"notebook_path": "/n.ipynb", "new_source": "print(1)"}, ("n.ipynb", "new_source")),
]
CTX = RenderContext(form_url="https://gate.example/f/0123456789abcdef.secret", now=1_800_000_000.0)


def request(tool: str, call_input: dict[str, Any]) -> HumanFunction:
    rule = session_rule(tool, call_input)
    return HumanFunction(
        id="0123456789abcdef",
        requester="ci-bot",
        channel="web",
        message=describe_call("ci-bot", tool, call_input, 32 * 1024),
        request_schema=decision_schema(None if rule is None else session_title(rule), "0a1b2c3d4e5f"),
        created_at=CTX.now,
        deadline=CTX.now + 300,
        form_secret="s" * 32,
    )


def shown(payload: Any) -> str:
    """Everything a channel's payload says, as one text (escapes undone as far as JSON goes)."""
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, default=str)
    return text.replace("\\", "").replace("\u2060", "").replace("\u200b", "")


@pytest.mark.parametrize("channel", list(CHANNELS))
@pytest.mark.parametrize(("tool", "call_input", "words"), CALLS, ids=[call[0] for call in CALLS])
def test_every_tool_kind_reads_on_every_surface(
    channel: str, tool: str, call_input: dict[str, Any], words: tuple[str, ...]
) -> None:
    payload = shown(CHANNELS[channel].render(request(tool, call_input), CTX))
    assert "wants to use" in payload
    for word in words:
        assert word in payload, (channel, word)
    assert SECRET not in payload
    if session_rule(tool, call_input) is not None:
        assert "Allow for this session" in payload, channel
    assert "Allow" in payload
