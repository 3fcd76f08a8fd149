"""``approval_prompt`` end to end (docs/permissions.md): the official MCP client calls it as Claude Code
does, a person answers on the web form, and the result is the one JSON text Claude Code reads."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import StartGateway
from tests.gateway.flows import WAIT, post_form, start_call
from tests.mcp_client import ERAS, Era, call_elicit, text_of

PUSH = {"tool_name": "Bash", "input": {"command": "git push origin main", "description": "Push the fix"}}


def decision(result: Any) -> dict[str, Any]:
    assert not result.is_error and len(result.content) == 1, result
    text = text_of(result)
    assert text == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)  # compact
    parsed: dict[str, Any] = json.loads(text)
    return parsed


@pytest.mark.parametrize("era", ERAS)
async def test_a_person_allows_and_the_agent_gets_its_input_back(
    start_gateway: StartGateway, era: Era
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, PUSH | {"tool_use_id": "toolu_01"}, era=era, tool="approval_prompt")
    form = await call.form_url()
    async with httpx.AsyncClient(timeout=WAIT) as client:
        page = (await client.get(form)).text
    assert "wants to use" in page and "git push origin main" in page and "Push the fix" in page
    assert (await post_form(form, {"hg-action": "accept", "f.decision": "allow"})).status_code == 303
    assert decision(await call.result()) == {"behavior": "allow", "updatedInput": PUSH["input"]}


async def test_allow_for_this_session_adds_the_rule_the_button_named(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, PUSH, tool="approval_prompt")
    form = await call.form_url()
    async with httpx.AsyncClient(timeout=WAIT) as client:
        page = (await client.get(form)).text
    assert "Allow for this session: Bash(git push origin main)" in page
    assert (await post_form(form, {"hg-action": "accept", "f.decision": "session"})).status_code == 303
    assert decision(await call.result()) == {
        "behavior": "allow",
        "updatedInput": PUSH["input"],
        "updatedPermissions": [
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "git push origin main"}],
                "behavior": "allow",
                "destination": "session",
            }
        ],
    }


async def test_a_decline_denies_with_the_reason_and_a_timeout_never_allows(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="2", HUMANGATE_POLL_INTERVAL="0.5")
    call = start_call(gateway.url, PUSH, tool="approval_prompt")
    form = await call.form_url()
    assert (
        await post_form(form, {"hg-action": "decline", "hg-reason": "not on a Friday"})
    ).status_code == 303
    denied = decision(await call.result())
    assert denied["behavior"] == "deny" and denied["message"].endswith(": not on a Friday")
    assert denied["message"].startswith("Denied by ")
    timed_out = decision(await call_elicit(gateway.url, PUSH, tool="approval_prompt"))
    assert timed_out == {"behavior": "deny", "message": "No answer within 2 seconds"}


async def test_an_mcp_tool_is_allowed_for_the_session_without_rule_content(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    arguments = {"tool_name": "mcp__github__delete_repository", "input": {"repo": "acme/site"}}
    call = start_call(gateway.url, arguments, tool="approval_prompt")
    form = await call.form_url()
    assert (await post_form(form, {"hg-action": "accept", "f.decision": "session"})).status_code == 303
    result = decision(await call.result())
    assert result["updatedPermissions"][0]["rules"] == [{"toolName": "mcp__github__delete_repository"}]


async def test_ask_user_question_is_answered_by_the_person_in_updated_input(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    questions = [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [
                {"label": "SQLite", "description": "One file", "preview": "sqlite3 app.db"},
                {"label": "PostgreSQL", "description": "A server"},
            ],
            "multiSelect": False,
        }
    ]
    call = start_call(
        gateway.url,
        {"tool_name": "AskUserQuestion", "input": {"questions": questions}},
        tool="approval_prompt",
    )
    form = await call.form_url()
    assert (await post_form(form, {"hg-action": "accept", "f.q1": "PostgreSQL"})).status_code == 303
    assert decision(await call.result()) == {
        "behavior": "allow",
        "updatedInput": {"questions": questions, "answers": {"Which database?": "PostgreSQL"}},
    }


async def test_bad_arguments_name_the_argument(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    missing = await call_elicit(gateway.url, {"tool_name": "Bash"}, tool="approval_prompt")
    assert missing.is_error and text_of(missing) == "Invalid arguments: input: is required"
    wrong = await call_elicit(gateway.url, {"tool_name": "", "input": []}, tool="approval_prompt")
    assert (
        wrong.is_error
        and "tool_name: must not be empty" in text_of(wrong)
        and "input: must be an object" in text_of(wrong)
    )


async def test_an_input_of_a_mebibyte_is_accepted_and_more_refused(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    # 1000 KiB: the official Python client reads server-sent events of at most 1 MiB, and the result
    # carries the input back.
    content = "x" * (1000 * 1024)
    write = {"tool_name": "Write", "input": {"file_path": "/r/big.txt", "content": content}}
    call = start_call(gateway.url, write, tool="approval_prompt")
    form = await call.form_url()
    assert (await post_form(form, {"hg-action": "accept", "f.decision": "allow"})).status_code == 303
    assert decision(await call.result())["updatedInput"]["content"] == content
    over = {"tool_name": "Write", "input": {"file_path": "/r/big.txt", "content": content + "y" * 25 * 1024}}
    refused = await call_elicit(gateway.url, over, tool="approval_prompt")
    assert (
        refused.is_error
        and text_of(refused) == "Invalid arguments: input: must be at most 1048576 bytes as JSON"
    )
