"""What a person reads of a tool call (docs/permissions.md#what-a-person-sees), through the same parse
every surface renders."""

from __future__ import annotations

from typing import Any

import pytest

from channels.document.model import Code, is_diff, plain_text
from channels.document.parse import parse
from gateway.permissions.describe import WRITE_PREVIEW_LINES, describe_call, mcp_parts

LIMIT = 32 * 1024


def blocks(tool: str, call_input: dict[str, Any]) -> tuple[Any, ...]:
    return parse(describe_call("ci-bot", tool, call_input, LIMIT)).blocks


def codes(tool: str, call_input: dict[str, Any]) -> list[Code]:
    return [block for block in blocks(tool, call_input) if isinstance(block, Code)]


def test_bash_is_its_command_as_code_after_its_description() -> None:
    command = "git push --force origin main && echo ```done```"
    document = blocks("Bash", {"command": command, "description": "Push **now**"})
    assert plain_text(document[:1]) == "ci-bot wants to use Bash"
    (code,) = [block for block in document if isinstance(block, Code)]
    assert code.text == command and code.language == "bash"
    assert "Push now" in plain_text(document)


def test_an_edit_is_a_unified_diff_with_its_path() -> None:
    (diff,) = codes(
        "Edit",
        {"file_path": "/repo/app.yaml", "old_string": "replicas: 2\nx", "new_string": "replicas: 4\nx"},
    )
    assert is_diff(diff)
    assert diff.text.split("\n") == [
        "--- a/repo/app.yaml",
        "+++ b/repo/app.yaml",
        "@@ -1,2 +1,2 @@",
        "-replicas: 2",
        "+replicas: 4",
        " x",
    ]
    edits = [
        {"old_string": "a", "new_string": "b"},
        {"old_string": "c", "new_string": "d", "replace_all": True},
    ]
    document = blocks("MultiEdit", {"file_path": "/r/f.py", "edits": edits})
    assert "/r/f.py (every occurrence)" in plain_text(document)
    (multi,) = [block for block in document if isinstance(block, Code)]
    assert sum(line.startswith("@@") for line in multi.text.split("\n")) == 2
    assert "-a" in multi.text and "+d" in multi.text


def test_write_shows_the_path_size_and_first_lines() -> None:
    content = "\n".join(f"line {i}" for i in range(100))
    document = blocks("Write", {"file_path": "/r/notes.py", "content": content})
    text = plain_text(document)
    assert f"/r/notes.py ({len(content)} bytes, 100 lines)" in text
    (code,) = [block for block in document if isinstance(block, Code)]
    assert code.language == "python" and code.text.split("\n") == [
        f"line {i}" for i in range(WRITE_PREVIEW_LINES)
    ]
    assert f"{100 - WRITE_PREVIEW_LINES} more not shown" in text


@pytest.mark.parametrize(
    ("call_input", "shown"),
    [
        ({"file_path": "/etc/hosts"}, "/etc/hosts, the whole file"),
        ({"file_path": "/a", "offset": 10, "limit": 5}, "/a, lines 10 to 14"),
        ({"file_path": "/a", "offset": 7}, "/a, from line 7"),
    ],
)
def test_read_shows_the_path_and_range(call_input: dict[str, Any], shown: str) -> None:
    assert shown in plain_text(blocks("Read", call_input))


def test_web_fetch_shows_the_url_its_host_and_the_prompt() -> None:
    text = plain_text(blocks("WebFetch", {"url": "https://docs.python.org/3/x", "prompt": "Summarise it"}))
    assert "https://docs.python.org/3/x (host docs.python.org)" in text and "Summarise it" in text
    assert "Search for: python 3.14" in plain_text(blocks("WebSearch", {"query": "python 3.14"}))
    task = plain_text(
        blocks("Task", {"description": "Find bugs", "prompt": "Look at *all*", "subagent_type": "review"})
    )
    assert "Task: Find bugs (review)" in task and "Look at all" in task


def test_an_mcp_tool_shows_server_tool_and_arguments_as_json() -> None:
    assert mcp_parts("mcp__github__delete_repository") == ("github", "delete_repository")
    assert mcp_parts("Bash") == (None, None)
    document = blocks("mcp__github__delete_repository", {"repo": "acme/site"})
    assert plain_text(document[:1]) == "ci-bot wants to use delete_repository from the MCP server github"
    (code,) = [block for block in document if isinstance(block, Code)]
    assert code.language == "json" and '"repo": "acme/site"' in code.text


def test_names_cannot_restyle_the_message() -> None:
    message = describe_call("[evil](https://e.example) **x**", "Bash`", {"command": "ls"}, LIMIT)
    text = plain_text(parse(message).blocks[:1])
    assert text == "[evil](https://e.example) **x** wants to use Bash`"


def test_secrets_are_masked_in_what_people_see() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    text = describe_call("ci", "Bash", {"command": f"AWS_ACCESS_KEY_ID={key} aws s3 ls"}, LIMIT)
    assert key not in text and "AKIA\u2022" in text


def test_a_call_too_large_shows_its_first_lines_and_says_how_many_more() -> None:
    command = "\n".join(f"echo {i}" for i in range(20000))
    message = describe_call("ci", "Bash", {"command": command}, LIMIT)
    assert len(message.encode()) <= LIMIT
    document = parse(message)
    (code,) = [block for block in document.blocks if isinstance(block, Code)]
    assert code.text.startswith("echo 0\necho 1\n") and code.language == "bash"
    assert "more lines not shown; the agent's call is unchanged." in plain_text(document.blocks[-1:])
