"""``approval_prompt`` end to end (docs/permissions.md): the official MCP client calls it as Claude Code
does, a person answers on the web form, and the result is the one JSON text Claude Code reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import StartGateway, run_cli
from tests.gateway.flows import FORM_LINK, WAIT, post_form, start_call
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


RULES = """\
[policies.coding]
callers = ["coder"]

[policies.coding.tools]
allow = ["Read", "Bash(npm test *)", "Bash(git status)", "WebFetch(domain:docs.python.org)"]
ask   = ["Bash(git push *)"]
deny  = ["Bash(rm -rf *)", "Edit(**/.env)", "mcp__github__delete_repository"]
"""


async def test_policy_rules_decide_at_once_and_the_audit_names_the_rule(
    start_gateway: StartGateway, tmp_path: Path, redis_url: str
) -> None:
    policies = tmp_path / "policies.toml"
    policies.write_text(RULES)
    gateway = start_gateway(HUMANGATE_API_KEYS="coder:k-coder", HUMANGATE_POLICY_FILE=str(policies))
    allowed = {"tool_name": "Bash", "input": {"command": "npm test -- --watch=false && git status"}}
    assert decision(await call_elicit(gateway.url, allowed, tool="approval_prompt", api_key="k-coder")) == {
        "behavior": "allow",
        "updatedInput": allowed["input"],
    }
    for denied, rule in [
        ({"tool_name": "Bash", "input": {"command": "npm test && rm -rf /"}}, "Bash(rm -rf *)"),
        (
            {
                "tool_name": "Edit",
                "input": {"file_path": "/repo/app/.env", "old_string": "a", "new_string": "b"},
            },
            "Edit(**/.env)",
        ),
        (
            {"tool_name": "mcp__github__delete_repository", "input": {"repo": "a/b"}},
            "mcp__github__delete_repository",
        ),
    ]:
        result = decision(await call_elicit(gateway.url, denied, tool="approval_prompt", api_key="k-coder"))
        assert result == {"behavior": "deny", "message": f"Denied by policy 'coding': {rule}"}
    # git push is asked even though nothing allows it, and a person is asked for what no rule names.
    for asked in (
        {"tool_name": "Bash", "input": {"command": "git push origin main"}},
        {"tool_name": "Write", "input": {"file_path": "/r/x", "content": ""}},
    ):
        call = start_call(gateway.url, asked, tool="approval_prompt", api_key="k-coder")
        form = await call.form_url()
        assert (await post_form(form, {"hg-action": "accept", "f.decision": "allow"})).status_code == 303
        assert decision(await call.result())["behavior"] == "allow"
    exported = run_cli("audit", "export", env={}, redis_url=redis_url)
    assert exported.returncode == 0, exported.stderr
    decided = [
        event for line in exported.stdout.splitlines() if (event := json.loads(line))["event"] == "decided"
    ]
    assert sorted((event["behavior"], event["rule"]) for event in decided) == [
        ("allow", "Bash(npm test *), Bash(git status)"),
        ("deny", "Bash(rm -rf *)"),
        ("deny", "Edit(**/.env)"),
        ("deny", "mcp__github__delete_repository"),
    ]
    assert {(event["caller"], event["policy"]) for event in decided} == {("key:coder", "coding")}


async def test_allow_for_this_session_is_remembered_for_the_mcp_session(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http), mode="legacy") as client,
    ):

        async def call(arguments: dict[str, Any]) -> tuple[asyncio.Task[Any], asyncio.Queue[str]]:
            links: asyncio.Queue[str] = asyncio.Queue()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                if match := FORM_LINK.search(message or ""):
                    links.put_nowait(match.group(1))

            task = asyncio.create_task(
                client.call_tool("approval_prompt", arguments, progress_callback=on_progress)
            )
            return task, links

        first, links = await call(PUSH)
        form = await asyncio.wait_for(links.get(), WAIT)
        assert (await post_form(form, {"hg-action": "accept", "f.decision": "session"})).status_code == 303
        assert (
            decision(await first)["updatedPermissions"][0]["rules"][0]["ruleContent"]
            == "git push origin main"
        )
        again, _ = await call(PUSH)  # the client ignored updatedPermissions: humangate remembers
        assert decision(await asyncio.wait_for(again, WAIT)) == {
            "behavior": "allow",
            "updatedInput": PUSH["input"],
        }
        other, links = await call({"tool_name": "Bash", "input": {"command": "git push origin dev"}})
        form = await asyncio.wait_for(links.get(), WAIT)  # another command: a person again
        assert (await post_form(form, {"hg-action": "decline"})).status_code == 303
        assert decision(await other)["behavior"] == "deny"
    # Another session (a new connection) is asked again.
    fresh = start_call(gateway.url, PUSH, tool="approval_prompt")
    assert FORM_LINK.search(await fresh.form_url())
    fresh.task.cancel()
