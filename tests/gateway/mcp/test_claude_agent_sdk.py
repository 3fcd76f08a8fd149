"""docs/permissions.md's Python recipe for the Claude Agent SDK (``claude-agent-sdk``, which runs the
Claude Code CLI it bundles), as written there, against a real gateway and the fake Messages API: a
person allows the call in the inbox and the agent's run goes on."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions, Message, ResultMessage, query

from tests.claude_code import claude_env, person_in_inbox
from tests.conftest import StartGateway
from tests.fakes.anthropic import FakeAnthropic, result_text, tool_use
from tests.gateway.inbox.operators import create_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

RUN_TIMEOUT = 90.0
"""Seconds the SDK's run may take before the test fails."""


async def test_the_python_recipe_asks_a_person_and_the_agent_goes_on(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS="agent:k-agent")
    operator = await create_key(redis_url, "ada")
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    release = {"command": "mkdir -v released", "description": "Mark the release"}
    with FakeAnthropic(steps=[tool_use("Bash", release)], final="Released.").running() as model:
        options = ClaudeAgentOptions(
            mcp_servers={
                "humangate": {
                    "type": "http",
                    "url": f"{gateway.url}/mcp",
                    "headers": {"Authorization": "Bearer k-agent"},
                }
            },
            permission_prompt_tool_name="mcp__humangate__approval_prompt",
            # Only what the test needs beyond the recipe: the fake model, a home and a directory.
            cwd=tmp_path / "work",
            env=claude_env(tmp_path / "home", model.url),
        )

        async def agent() -> list[Message]:
            return [m async for m in query(prompt="Push the fix", options=options)]

        async with person_in_inbox(gateway.url, operator) as person:
            run = asyncio.create_task(asyncio.wait_for(agent(), RUN_TIMEOUT))
            hf_id = await person.wait_for_request()
            page = html.unescape(await person.page(hf_id))
            assert "agent wants to use Bash" in page and "mkdir -v released" in page
            await person.answer(hf_id, {"hg-action": "accept", "f.decision": "allow"})
            messages = await run
        result = model.tool_results()["toolu_01"]
    assert not result.get("is_error") and "created directory 'released'" in result_text(result)
    final = messages[-1]
    assert isinstance(final, ResultMessage) and final.result == "Released." and not final.is_error
    assert (tmp_path / "work" / "released").is_dir()
