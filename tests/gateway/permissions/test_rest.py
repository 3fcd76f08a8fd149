"""Permission prompts over REST (docs/permissions.md#rest): ``POST /v1/requests`` with ``tool``, for
agents on other frameworks; the result's ``text`` is the JSON ``approval_prompt`` returns."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.conftest import StartGateway
from tests.gateway.flows import WAIT, post_form

RULES = """\
[policies.agents]
callers = ["agent"]

[policies.agents.tools]
allow = ["Bash(npm test *)"]
deny  = ["Bash(rm -rf *)"]
"""
HEADERS = {"Authorization": "Bearer k-agent"}


async def test_a_tool_call_is_asked_answered_and_read_back_as_the_prompt_tools_json(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    policies = tmp_path / "policies.toml"
    policies.write_text(RULES)
    gateway = start_gateway(HUMANGATE_API_KEYS="agent:k-agent", HUMANGATE_POLICY_FILE=str(policies))
    call = {"name": "Bash", "input": {"command": "git push origin main"}}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT, headers=HEADERS) as client:
        created = await client.post("/v1/requests", json={"tool": call, "uiType": "web"})
        assert created.status_code == 201, created.text
        view = created.json()
        assert view["status"] == "pending" and view["policy"] == "agents" and view["result"] is None
        page = (await client.get(view["form_url"])).text
        assert "git push origin main" in page and "Allow for this session" in page
        answer = {"hg-action": "accept", "f.decision": "session"}
        assert (await post_form(view["form_url"], answer)).status_code == 303
        read = (await client.get(f"/v1/requests/{view['id']}")).json()
        result = read["result"]
        assert result["isError"] is False and json.loads(result["text"]) == {
            "behavior": "allow",
            "updatedInput": call["input"],
            "updatedPermissions": [
                {
                    "type": "addRules",
                    "rules": [{"toolName": "Bash", "ruleContent": "git push origin main"}],
                    "behavior": "allow",
                    "destination": "session",
                }
            ],
        }
        assert result["structuredContent"]["behavior"] == "allow"
        denied = await client.post(
            "/v1/requests", json={"tool": {"name": "Bash", "input": {"command": "rm -rf /"}}}
        )
        assert denied.status_code == 201 and denied.json()["status"] == "decided"
        assert json.loads(denied.json()["result"]["text"]) == {
            "behavior": "deny",
            "message": "Denied by policy 'agents': Bash(rm -rf *)",
        }
        allowed = await client.post(
            "/v1/requests", json={"tool": {"name": "Bash", "input": {"command": "npm test"}}}
        )
        assert json.loads(allowed.json()["result"]["text"]) == {
            "behavior": "allow",
            "updatedInput": {"command": "npm test"},
        }


async def test_a_tool_call_with_a_message_or_without_input_is_refused(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        both = await client.post(
            "/v1/requests",
            json={"tool": {"name": "Bash", "input": {}}, "message": "x", "schema": {"type": "object"}},
        )
        assert both.status_code == 422 and "not both" in both.text
        neither = await client.post("/v1/requests", json={"uiType": "web"})
        assert neither.status_code == 422
        assert neither.json()["violations"] == [
            {"path": "message", "rule": "is required"},
            {"path": "schema", "rule": "is required"},
        ]
        no_input = await client.post("/v1/requests", json={"tool": {"name": "Bash"}})
        assert no_input.status_code == 422 and "input" in no_input.text
