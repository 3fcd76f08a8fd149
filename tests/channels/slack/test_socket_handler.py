"""Bolt's Socket Mode handler of a lease (``LeasedSocket``) in this process, over a real Redis and
the fake Slack: a listener that raises still gets its envelope acknowledged, and the person is told
in words (a click through ``response_url``, a submission in its modal)."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.interactions import NOT_RECORDED
from channels.slack.listeners import ANY, answer
from channels.slack.middleware import add_middleware, signed_requests
from channels.slack.socket_handler import LeasedSocket
from gateway.desk import RuntimeDesk
from gateway.runtime import open_runtime
from schemas.settings import Settings
from tests.fakes.slack import APP_TOKEN, FakeSlack


class _Held:
    """The lease of the connection, as ``gateway.openings`` hands it over."""

    slot = "slack:0"

    def touch(self) -> None:
        return None


async def _failing(desk: RuntimeDesk, slack: FakeSlack) -> AsyncApp:
    """An app with humangate's middleware and one listener, for every action and view, that raises."""

    async def authorize(enterprise_id: str | None, team_id: str | None, **_: Any) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=slack.token)

    app = AsyncApp(
        client=AsyncWebClient(base_url=slack.api_url),
        authorize=authorize,
        signing_secret="unused",
        request_verification_enabled=False,
        before_authorize=signed_requests(desk),
        process_before_response=True,
    )
    add_middleware(app, desk)

    async def broken() -> dict[str, Any]:
        raise RuntimeError("a listener with a bug")

    async def listener(ack: AsyncAck, context: AsyncBoltContext) -> None:
        await answer(ack, context, broken)

    app.action(ANY)(listener)
    app.view_submission(ANY)(listener)
    return app


def _envelope(payload: dict[str, Any]) -> SocketModeRequest:
    return SocketModeRequest(type="interactive", envelope_id=f"e-{len(str(payload))}", payload=payload)


async def test_a_listener_that_raises_still_acks_and_the_person_is_told(
    settings: Settings, slack: FakeSlack
) -> None:
    async with open_runtime(slack.settings(settings)) as runtime:
        desk = RuntimeDesk(runtime, "slack")
        handler = LeasedSocket(await _failing(desk, slack), APP_TOKEN, _Held(), desk)
        hook = f"{slack.url}/hooks/T1/U1/hg:approve"
        button = {"action_id": "hg:approve", "block_id": "b", "type": "button"}
        clicked: dict[str, Any] = {"type": "block_actions", "user": {"id": "U1"}, "actions": [button]}
        view = {"id": "V1", "type": "modal", "callback_id": "hg:form", "state": {"values": {}}}
        submitted: dict[str, Any] = {"type": "view_submission", "user": {"id": "U1"}, "view": view}
        try:
            assert await handler.reply(_envelope(clicked | {"response_url": hook})) == {}  # a plain ack
            (told,) = await slack.replies()
            assert told["text"] == NOT_RECORDED and told["response_type"] == "ephemeral"

            reply = await handler.reply(_envelope(submitted))
            assert reply["response_action"] == "update"
            assert NOT_RECORDED in str(reply["view"])
            # A body Bolt itself fails on (a view without its type) is acknowledged the same way.
            del view["type"]
            broken = await handler.reply(_envelope(submitted | {"view": view} | {"trigger_id": "t2"}))
            assert broken["response_action"] == "update"
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]
