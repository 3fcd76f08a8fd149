"""The real Claude Code CLI (``@anthropic-ai/claude-code``, pinned in tests/js) with humangate's
``approval_prompt`` as its permission prompt tool (docs/permissions.md): a real ``humangate serve``,
a fake Messages API as the model, and a person answering in the inbox. Each test is one ``claude -p``
run of a few seconds; the model's turns are scripted and what the CLI sends back is read from the
fake model's requests."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code import Person, person_in_inbox, run_claude
from tests.conftest import StartGateway
from tests.fakes.anthropic import FakeAnthropic, result_text, tool_use
from tests.fakes.proxy import recording_proxy
from tests.gateway.inbox.operators import create_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

RELEASE = {"command": "mkdir -v released", "description": "Mark the release"}
"""A call Claude Code does not judge read-only (it asks), with a visible effect and output."""
ALLOW = {"hg-action": "accept", "f.decision": "allow"}


def fake_model(*steps: dict[str, Any]) -> FakeAnthropic:
    return FakeAnthropic(steps=list(steps), final="Released.")


async def answered(person: Person, fields: dict[str, str], number: int = 1) -> str:
    """Wait for the ``number``-th request in the inbox, check it is the call, answer it."""
    hf_id = await person.wait_for_request(number)
    page = html.unescape(await person.page(hf_id))
    assert "wants to use Bash" in page and "mkdir -v released" in page, page
    await person.answer(hf_id, fields)
    return hf_id


async def test_a_person_allows_and_the_command_runs(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    with (
        fake_model(tool_use("Bash", RELEASE)).running() as model,
        recording_proxy(gateway.url).running() as wire,
    ):
        async with person_in_inbox(gateway.url, key) as person:
            run = asyncio.create_task(run_claude(tmp_path, wire.url, model.url))
            await answered(person, ALLOW)
            outcome = (await run).result()
        result = model.tool_results()["toolu_01"]
        sent = [call.json() for call in wire.calls_to("/mcp", "POST")]
    assert not result.get("is_error") and "created directory 'released'" in result_text(result)
    assert (tmp_path / "claude-work" / "released").is_dir()
    assert outcome["result"] == "Released." and outcome["permission_denials"] == []
    # What the CLI sends (docs/permissions.md): the 2026-07-28 era, no initialize, the call's id twice.
    methods = [message["method"] for message in sent]
    assert methods[0] == "server/discover" and "initialize" not in methods
    call = next(message["params"] for message in sent if message["method"] == "tools/call")
    assert call["name"] == "approval_prompt"
    assert call["arguments"] == {"tool_name": "Bash", "input": RELEASE, "tool_use_id": "toolu_01"}
    meta = call["_meta"]
    assert meta["claudecode/toolUseId"] == "toolu_01" and "progressToken" in meta
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


async def test_a_person_denies_and_the_model_gets_the_reason_as_an_error(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    with fake_model(tool_use("Bash", RELEASE)).running() as model:
        async with person_in_inbox(gateway.url, key) as person:
            run = asyncio.create_task(run_claude(tmp_path, gateway.url, model.url))
            await answered(person, {"hg-action": "decline", "hg-reason": "not on a Friday"})
            outcome = (await run).result()
        result = model.tool_results()["toolu_01"]
    assert result["is_error"] is True and result_text(result) == "Denied by ada: not on a Friday"
    assert not (tmp_path / "claude-work" / "released").exists()
    assert [d["tool_name"] for d in outcome["permission_denials"]] == ["Bash"]


async def test_allow_for_this_session_is_not_asked_again_in_the_run(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    again = {"command": "mkdir -pv released", "description": "Mark the release"}
    first, second = tool_use("Bash", again), tool_use("Bash", again)
    with fake_model(first, second).running() as model:
        async with person_in_inbox(gateway.url, key) as person:
            # Were the second call asked, nobody would answer it: it would time out in 30 s.
            run = asyncio.create_task(run_claude(tmp_path, gateway.url, model.url, MCP_TOOL_TIMEOUT="30000"))
            hf_id = await person.wait_for_request()
            page = html.unescape(await person.page(hf_id))
            assert "Allow for this session: Bash(mkdir -pv released)" in page
            await person.answer(hf_id, {"hg-action": "accept", "f.decision": "session"})
            outcome = (await run).result()
        results = model.tool_results()
        assert [r["id"] for r in person.requests] == [hf_id]  # humangate was asked once
    assert "created directory 'released'" in result_text(results["toolu_01"])
    assert not results["toolu_01"].get("is_error") and not results["toolu_02"].get("is_error")
    assert outcome["result"] == "Released." and outcome["permission_denials"] == []


QUESTIONS = [
    {
        "question": "Which branch should I release from?",
        "header": "Branch",
        "options": [
            {"label": "main", "description": "What is merged"},
            {"label": "release", "description": "The release branch"},
        ],
        "multiSelect": False,
    }
]


async def test_ask_user_question_is_answered_by_the_person_in_the_form(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    with fake_model(tool_use("AskUserQuestion", {"questions": QUESTIONS})).running() as model:
        offered = None
        async with person_in_inbox(gateway.url, key) as person:
            run = asyncio.create_task(run_claude(tmp_path, gateway.url, model.url))
            hf_id = await person.wait_for_request()
            page = html.unescape(await person.page(hf_id))
            assert "Which branch should I release from?" in page and "The release branch" in page
            await person.answer(hf_id, {"hg-action": "accept", "f.q1": "release"})
            outcome = (await run).result()
        result = model.tool_results()["toolu_01"]
        offered = [tool["name"] for tool in model.requests()[0]["tools"]]
    assert "AskUserQuestion" in offered  # offered to the model only because a prompt tool is set
    assert not result.get("is_error"), result
    assert '"Which branch should I release from?"="release"' in result_text(result)
    assert outcome["result"] == "Released."


@pytest.mark.parametrize("where", ["MCP_TOOL_TIMEOUT", "the server's timeout"])
async def test_an_answer_after_the_clients_tool_timeout_is_lost(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path, where: str
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    # The CLI's limit on one call, in milliseconds: its environment's, or the server entry's in the
    # MCP configuration (which wins); progress notifications do not extend it.
    limit: dict[str, Any] = {"MCP_TOOL_TIMEOUT": "5000"}
    if where != "MCP_TOOL_TIMEOUT":
        limit = {"server_timeout": 5000, "MCP_TOOL_TIMEOUT": "600000"}
    with fake_model(tool_use("Bash", RELEASE)).running() as model:
        async with person_in_inbox(gateway.url, key) as person:
            run = asyncio.create_task(run_claude(tmp_path, gateway.url, model.url, **limit))
            hf_id = await person.wait_for_request()
            cut_off = await model.wait_for_result("toolu_01")
            # The request is still pending in humangate: the person can answer, nobody gets it.
            await answered(person, ALLOW)
            outcome = (await run).result()
    assert cut_off["is_error"] is True
    assert result_text(cut_off) == (
        '<tool_use_error>Error calling tool (Bash): MCP server "humangate" tool'
        ' "approval_prompt" timed out after 5s</tool_use_error>'
    )
    assert [r["id"] for r in person.requests] == [hf_id]
    assert not (tmp_path / "claude-work" / "released").exists()
    assert outcome["result"] == "Released."


LATE = 20.0
"""Seconds the person takes to answer in the late test: past the 5 s poll, well inside the timeout."""


async def test_an_answer_within_the_clients_tool_timeout_arrives_however_late(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    with fake_model(tool_use("Bash", RELEASE)).running() as model:
        async with person_in_inbox(gateway.url, key) as person:
            run = asyncio.create_task(run_claude(tmp_path, gateway.url, model.url, MCP_TOOL_TIMEOUT="60000"))
            hf_id = await person.wait_for_request()
            await asyncio.sleep(LATE)  # the person's delay is what this test is about, not a sync
            assert not model.tool_results()  # the CLI is still waiting
            await answered(person, ALLOW)
            outcome = (await run).result()
        result = model.tool_results()["toolu_01"]
    assert [r["id"] for r in person.requests] == [hf_id]
    assert not result.get("is_error") and "created directory 'released'" in result_text(result)
    assert outcome["result"] == "Released."


RULES = """\
[policies.coding]
callers = ["coder"]

[policies.coding.tools]
allow = ["Bash(mkdir *)"]
deny  = ["Bash(rm -rf *)"]
"""


async def test_policy_rules_decide_with_no_person(start_gateway: StartGateway, tmp_path: Path) -> None:
    policies = tmp_path / "policies.toml"
    policies.write_text(RULES)
    gateway = start_gateway(HUMANGATE_API_KEYS="coder:k-coder", HUMANGATE_POLICY_FILE=str(policies))
    remove = {"command": "rm -rf released", "description": "Clean up"}
    with fake_model(tool_use("Bash", RELEASE), tool_use("Bash", remove)).running() as model:
        outcome = (await run_claude(tmp_path, gateway.url, model.url, api_key="k-coder")).result()
        results = model.tool_results()
    assert "created directory 'released'" in result_text(results["toolu_01"])
    assert results["toolu_02"]["is_error"] is True
    assert result_text(results["toolu_02"]) == "Denied by policy 'coding': Bash(rm -rf *)"
    assert (tmp_path / "claude-work" / "released").is_dir()
    assert [d["tool_name"] for d in outcome["permission_denials"]] == ["Bash"]
