"""Tasks with the official TypeScript SDK client (2025-11-25 tasks, ``tests/js``) against a
real gateway process and Redis: the SDK's whole task flow, restart survival, ``tasks/cancel``, and
task ids bound to their caller. See docs/tools.md#tasks."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import StartGateway
from tests.gateway.flows import FORM_LINK, WAIT, post_form

JS = Path(__file__).resolve().parents[2] / "js"
APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
ARGS = {"message": "Deploy v2.1?", "schema": APPROVAL, "uiType": "web"}
KEYS = "ci:hg_ci_key_1234567890,other:hg_other_key_1234567890"


@dataclass
class NodeClient:
    """One run of ``tests/js/tasks_client.mjs`` and the JSON lines it printed so far."""

    process: asyncio.subprocess.Process
    lines: list[dict[str, Any]] = field(default_factory=list)

    async def next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        raw = await asyncio.wait_for(self.process.stdout.readline(), WAIT)
        assert raw, f"the client ended early: {self.lines}"
        line: dict[str, Any] = json.loads(raw)
        self.lines.append(line)
        return line

    async def until(self, wanted: str) -> dict[str, Any]:
        while (line := await self.next())["type"] != wanted:
            assert line["type"] != "error", line
        return line

    async def finish(self) -> list[dict[str, Any]]:
        assert self.process.stdout is not None
        rest, _ = await asyncio.wait_for(self.process.communicate(), WAIT)
        self.lines += [json.loads(raw) for raw in rest.splitlines() if raw.strip()]
        assert self.process.returncode == 0
        return self.lines


async def node(url: str, mode: str, arg: str, key: str | None = None) -> NodeClient:
    executable = shutil.which("node")
    assert executable, "Node.js is needed for the TypeScript SDK client"
    env = {"PATH": str(Path(executable).parent), **({"HG_KEY": key} if key else {})}
    process = await asyncio.create_subprocess_exec(
        executable, str(JS / "tasks_client.mjs"), f"{url}/mcp", mode, arg,
        cwd=JS, env=env, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    return NodeClient(process)


async def one(url: str, mode: str, arg: str, key: str | None = None) -> dict[str, Any]:
    lines = await (await node(url, mode, arg, key)).finish()
    assert len(lines) == 1, lines
    return lines[0]


def form_link(text: str) -> str:
    match = FORM_LINK.search(text)
    assert match, f"no form link in {text!r}"
    return match.group(1)


async def test_the_sdk_task_flow_returns_the_exact_result(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_POLL_INTERVAL="0.2")
    client = await node(gateway.url, "stream", json.dumps(ARGS))
    created = (await client.until("taskCreated"))["task"]
    assert created["status"] == "working" and created["pollInterval"] == 200
    assert len(created["taskId"]) > 32  # an unguessable id
    form = form_link(created["statusMessage"])
    assert "Waiting for a person on web" in created["statusMessage"]
    await post_form(form, {"hg-action": "accept", "f.approved": "true", "f.reason": "Looks good to deploy"})
    result = (await client.until("result"))["result"]
    assert result["content"] == [
        {"type": "text", "text": 'User provided: {"approved":true,"reason":"Looks good to deploy"}'}
    ]
    assert result["structuredContent"]["action"] == "accept"
    await client.finish()


async def test_a_task_survives_a_gateway_restart_and_any_process_serves_it(
    start_gateway: StartGateway,
) -> None:
    first = start_gateway()
    created = await one(first.url, "create", json.dumps(ARGS))
    task_id = created["task"]["taskId"]
    first.stop()
    second = start_gateway()
    status = await one(second.url, "get", task_id)
    assert status["status"] == "working"
    await post_form(form_link(status["statusMessage"]), {"hg-action": "decline", "hg-reason": "not now"})
    result = await one(second.url, "result", task_id)
    assert result["result"]["content"][0]["text"] == "User declined: not now"
    assert result["result"]["isError"] is True
    assert (await one(second.url, "get", task_id))["status"] == "completed"


async def test_tasks_cancel_withdraws_the_request(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    created = await one(gateway.url, "create", json.dumps(ARGS))
    task_id = created["task"]["taskId"]
    form = form_link(created["task"]["statusMessage"])
    cancelled = await one(gateway.url, "cancel", task_id)
    assert cancelled["status"] == "cancelled"
    assert cancelled["statusMessage"] == "User canceled: Request canceled by the agent"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        assert "Request canceled by the agent" in (await http.get(form)).text
    result = await one(gateway.url, "result", task_id)
    assert result["result"]["content"][0]["text"] == "User canceled: Request canceled by the agent"
    again = await one(gateway.url, "cancel", task_id)
    assert again["type"] == "error" and "ended" in again["message"]


async def test_task_ids_are_bound_to_their_caller(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS=KEYS)
    created = await one(gateway.url, "create", json.dumps(ARGS), key="hg_ci_key_1234567890")
    task_id = created["task"]["taskId"]
    for mode in ("get", "result", "cancel"):
        stranger = await one(gateway.url, mode, task_id, key="hg_other_key_1234567890")
        assert stranger["type"] == "error" and "Task not found" in stranger["message"], stranger
        anonymous = await one(gateway.url, mode, task_id)
        assert anonymous["type"] == "error" and "Task not found" in anonymous["message"], anonymous
    forged = await one(gateway.url, "get", task_id[:-4] + "AAAA", key="hg_ci_key_1234567890")
    assert forged["type"] == "error" and "Task not found" in forged["message"]
    assert (await one(gateway.url, "get", task_id, key="hg_ci_key_1234567890"))["status"] == "working"
