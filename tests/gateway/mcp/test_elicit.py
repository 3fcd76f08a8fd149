"""``elicit`` end to end: official MCP client, real gateway process, real Redis and RQ worker."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import StartGateway
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import ERAS, Era, call_elicit, list_tools, text_of

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


@pytest.mark.parametrize("era", ERAS)
async def test_tools_list_is_exactly_the_spec_tool(start_gateway: StartGateway, era: Era) -> None:
    gateway = start_gateway()
    tools = {
        tool.name: tool.model_dump(by_alias=True, exclude_none=True)
        for tool in await list_tools(gateway.url, era=era)
    }
    elicit = tools.pop("elicit")
    # The additive fields (docs/tools.md#elicit): the inline form app, and (a 2025-11-25 field, sieved
    # on 2026-07-28) tasks.
    assert elicit.pop("_meta") == {"ui": {"resourceUri": "ui://humangate/form.html"}}
    assert elicit.pop("execution", {"taskSupport": "optional"}) == {"taskSupport": "optional"}
    assert ("execution" in tools["answer_request"]) is False
    assert elicit == {
        "name": "elicit",
        "description": "Request structured input from user via Human Functions",
        "inputSchema": {
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "Message explaining what information is needed",
                },
                "schema": {
                    "type": "object",
                    "description": "JSON Schema for requested data (flat object only)",
                },
                "uiType": {
                    "type": "string",
                    "enum": ["slack", "discord", "teams", "web", "telegram", "email"],
                    "description": "UI platform to use (default: slack)",
                },
            },
            "required": ["message", "schema"],
        },
    }
    # The other tools of docs/tools.md (tests/gateway/mcp/test_*.py), then the form app's, which hosts
    # never show the model.
    assert list(tools) == [
        "ask_user_question",
        "request_human_input",
        "request_user_input",
        "approval_prompt",
        "answer_request",
        "show_message",
    ]
    for app_only in ("answer_request", "show_message"):
        assert tools[app_only]["_meta"] == {
            "ui": {"resourceUri": "ui://humangate/form.html", "visibility": ["app"]}
        }


@pytest.mark.parametrize("era", ERAS)
async def test_an_accepted_web_answer_returns_the_exact_text_with_progress(
    start_gateway: StartGateway, era: Era
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Deploy v2.1?", "schema": APPROVAL, "uiType": "web"}, era=era)
    form = await call.form_url()
    assert form.startswith(f"{gateway.url}/f/")
    response = await post_form(
        form, {"hg-action": "accept", "f.approved": "true", "f.reason": "Looks good to deploy"}
    )
    assert response.status_code == 303
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true,"reason":"Looks good to deploy"}'
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["action"] == "accept"
    assert result.structured_content["content"] == {"approved": True, "reason": "Looks good to deploy"}
    assert result.structured_content["reason"] is None
    _, total, message = call.progress[0]
    assert total == 180
    assert message is not None and "web" in message and result.structured_content["id"] in message


async def test_progress_is_sent_at_every_poll_and_strictly_increases(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_POLL_INTERVAL="0.2")
    call = start_call(gateway.url, {"message": "Wait a bit", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    await call.wait_for_progress(4)
    await post_form(form, {"hg-action": "decline"})
    result = await call.result()
    assert text_of(result) == "User declined: No reason given"
    assert result.is_error
    values = [p for p, _, _ in call.progress]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all("left" in (m or "") for _, _, m in call.progress)


async def test_decline_with_a_reason_and_cancel(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    declined = start_call(gateway.url, {"message": "Share your email?", "schema": APPROVAL, "uiType": "web"})
    await post_form(
        await declined.form_url(), {"hg-action": "decline", "hg-reason": "Not comfortable sharing this"}
    )
    result = await declined.result()
    assert text_of(result) == "User declined: Not comfortable sharing this"
    assert result.structured_content == {
        "action": "decline",
        "content": None,
        "reason": "Not comfortable sharing this",
        "id": result.structured_content["id"] if result.structured_content else None,
        "answeredBy": {"channel": "web", "id": None, "name": "web form"},
    }
    canceled = start_call(gateway.url, {"message": "Pick one?", "schema": APPROVAL, "uiType": "web"})
    await post_form(await canceled.form_url(), {"hg-action": "cancel", "hg-reason": "Wrong person"})
    result = await canceled.result()
    assert text_of(result) == "User canceled: Wrong person"
    assert result.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_a_timeout_returns_the_exact_cancel_text(start_gateway: StartGateway, era: Era) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="2", HUMANGATE_POLL_INTERVAL="0.5")
    result = await asyncio.wait_for(
        call_elicit(gateway.url, {"message": "Anyone?", "schema": APPROVAL, "uiType": "web"}, era=era), 30
    )
    assert text_of(result) == "User canceled: Request timed out after 2 seconds"
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["action"] == "cancel"
    assert result.structured_content["answeredBy"] is None  # nobody answered


async def test_an_invalid_schema_names_each_violation_by_path(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    schema = {
        "type": "object",
        "properties": {"user": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "required": ["missing"],
    }
    result = await call_elicit(gateway.url, {"message": "Who?", "schema": schema, "uiType": "web"})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("Invalid schema: ")
    assert "properties.user: nested objects are not allowed" in text
    assert "required" in text and "missing" in text


async def test_bad_arguments_and_unconfigured_channels_are_clear_errors(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    result = await call_elicit(gateway.url, {"message": "Hi", "schema": APPROVAL, "uiType": "teams"})
    assert result.is_error and "configured channels: web" in text_of(result)
    result = await call_elicit(gateway.url, {"message": "", "schema": APPROVAL})
    assert result.is_error and text_of(result) == "message: must be a non-empty string"
    result = await call_elicit(gateway.url, {"message": "x" * 33000, "schema": APPROVAL})
    assert result.is_error and "message: must be at most 32768 bytes" in text_of(result)


async def test_a_wrong_api_key_is_a_401_and_a_right_one_gets_five_minutes(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS="ci:right-key")
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{gateway.url}/mcp",
            headers={"Authorization": "Bearer wrong-key", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    call = start_call(
        gateway.url, {"message": "As CI", "schema": APPROVAL, "uiType": "web"}, api_key="right-key"
    )
    form = await call.form_url()
    assert call.progress[0][1] == 300
    await post_form(form, {"hg-action": "accept", "f.approved": "false"})
    assert text_of(await call.result()) == 'User provided: {"approved":false}'


async def refusal(call: Awaitable[object]) -> MCPError:
    """The ``MCPError`` a call of the official client raises (its task group may wrap it)."""
    with pytest.raises(BaseException) as raised:
        await call
    error: BaseException = raised.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    assert isinstance(error, MCPError), repr(raised.value)
    return error


@pytest.mark.parametrize("era", ERAS)
async def test_the_official_client_shows_why_its_key_is_refused_and_how_to_get_one(
    start_gateway: StartGateway, era: Era
) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS="ci:right-key", HUMANGATE_REQUIRE_AUTH="true")
    arguments = {"message": "Hi", "schema": APPROVAL, "uiType": "web"}
    get_one = "an operator of this gateway makes one with: humangate keys create NAME"
    wrong = await refusal(call_elicit(gateway.url, arguments, api_key="wrong-key", era=era))
    assert wrong.message == (
        f"Unauthorized: invalid API key: this gateway has no such key (mistyped, or revoked); {get_one}"
    )
    assert wrong.data == {"error": "AuthError", "detail": wrong.message.removeprefix("Unauthorized: ")}
    missing = await refusal(call_elicit(gateway.url, arguments, era=era))
    assert missing.message == (
        f"Unauthorized: an API key is required: send Authorization: Bearer <key> ({get_one})"
    )
    async with httpx.AsyncClient() as client:  # the header a client that signs in reads is kept
        response = await client.post(
            f"{gateway.url}/mcp",
            headers={"Authorization": "Bearer wrong-key", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert (response.status_code, response.headers["www-authenticate"]) == (401, "Bearer")
    assert response.json()["jsonrpc"] == "2.0" and response.json()["id"] is None


async def test_anonymous_callers_are_refused_when_auth_is_required(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_REQUIRE_AUTH="true")
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{gateway.url}/mcp",
            headers={"Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert response.status_code == 401


async def test_host_and_origin_are_checked_on_mcp(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as client:
        bad_host = await client.post(
            f"{gateway.url}/mcp", headers=accept | {"Host": "evil.example"}, json=body
        )
        bad_origin = await client.post(
            f"{gateway.url}/mcp", headers=accept | {"Origin": "http://evil.example"}, json=body
        )
    assert bad_host.status_code == 421
    assert bad_origin.status_code == 403


async def test_no_standalone_stream_is_offered_so_sessions_stay_small(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{gateway.url}/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"POST", "DELETE"}
    for era in ERAS:  # the official client still calls tools in both eras
        assert [tool.name for tool in await list_tools(gateway.url, era=era)] == [
            "elicit",
            "ask_user_question",
            "request_human_input",
            "request_user_input",
            "approval_prompt",
            "answer_request",
            "show_message",
        ]


async def test_two_concurrent_answers_have_exactly_one_winner(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Race", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    responses = await asyncio.gather(
        post_form(form, {"hg-action": "accept", "f.approved": "true"}),
        post_form(form, {"hg-action": "decline", "hg-reason": "no"}),
    )
    assert sorted(r.status_code for r in responses) == [303, 409]
    loser = next(r for r in responses if r.status_code == 409)
    assert "already" in loser.text.lower()
    result = await call.result()
    winner_was_accept = responses[0].status_code == 303
    expected = 'User provided: {"approved":true}' if winner_was_accept else "User declined: no"
    assert text_of(result) == expected


async def test_a_disconnected_call_re_attaches_without_a_second_request(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    arguments = {"message": "Still there?", "schema": APPROVAL, "uiType": "web"}
    first = start_call(gateway.url, arguments)
    form = await first.form_url()
    first.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first.task
    second = start_call(gateway.url, arguments)
    assert await second.form_url() == form
    await post_form(form, {"hg-action": "accept", "f.approved": "true"})
    result = await second.result()
    assert text_of(result) == 'User provided: {"approved":true}'


async def test_a_gateway_restart_keeps_the_pending_request(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    port = gateway.url.rsplit(":", 1)[1]
    arguments = {"message": "Survive a restart", "schema": APPROVAL, "uiType": "web"}
    first = start_call(gateway.url, arguments)
    form = await first.form_url()
    gateway.stop()
    first.task.cancel()  # the agent's connection died with the old process
    with contextlib.suppress(BaseException):
        await first.task
    restarted = start_gateway(port=int(port))
    again = start_call(restarted.url, arguments)
    assert await again.form_url() == form
    response = await post_form(
        form, {"hg-action": "accept", "f.approved": "true", "f.reason": "after restart"}
    )
    assert response.status_code == 303
    assert text_of(await again.result()) == 'User provided: {"approved":true,"reason":"after restart"}'


async def test_the_agent_can_withdraw_its_request_over_rest(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Never mind", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    hf_id = form.rsplit("/", 1)[1].split(".")[0]
    async with httpx.AsyncClient() as client:
        response = await client.delete(f"{gateway.url}/v1/requests/{hf_id}")
        assert response.status_code == 200
        assert json.loads(response.text)["status"] == "canceled"
        assert text_of(await call.result()) == "User canceled: Request canceled by the agent"
        page = await client.get(form)
    assert "canceled by the agent" in page.text.lower()


async def test_form_secrets_never_reach_the_log(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Log hygiene", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    async with httpx.AsyncClient() as client:
        assert (await client.get(form)).status_code == 200
    await post_form(form, {"hg-action": "accept", "f.approved": "true"})
    await call.result()
    secret = form.rsplit(".", 1)[1]
    log = gateway.output()
    assert "GET /f/" in log and "<redacted>" in log  # the access log ran, redacted
    assert secret not in log


async def test_metrics_count_opened_and_ended_requests(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Count me", "schema": APPROVAL, "uiType": "web"})
    await post_form(await call.form_url(), {"hg-action": "decline"})
    await call.result()
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{gateway.url}/metrics")).text
        ready = await client.get(f"{gateway.url}/readyz")
    assert 'humangate_requests_opened_total{channel="web"} 1.0' in metrics
    assert 'humangate_requests_ended_total{status="declined"} 1.0' in metrics
    assert ready.json() == {"status": "ok", "redis": "ok"}


async def test_the_agents_own_client_cannot_answer_a_request_with_approvers(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    """docs/policies.md#approvers: no platform vouches for the client's user, so ``answer_request``
    is refused and the request waits for an approver."""
    policy = tmp_path / "humangate.toml"
    policy.write_text('[policies.gated]\napprovers = ["operator:alice"]\n')
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(policy))
    question = {"message": "Wipe staging?", "schema": APPROVAL, "uiType": "web"}
    call = start_call(gateway.url, question)
    await call.form_url()
    refused = await call_elicit(
        gateway.url, question | {"action": "accept", "content": {"approved": True}}, tool="answer_request"
    )
    assert refused.is_error and text_of(refused) == "You are not an approver for this request"
    assert not call.task.done()
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task
