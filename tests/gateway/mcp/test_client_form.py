"""The client's own form raced against the channel, with the official Python SDK client in
both eras: 2025-11-25 through server-to-client elicitation, 2026-07-28 through a task's input
requests. Real gateway process, real Redis, the web channel as the other side.
See docs/tools.md#the-clients-own-form."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import StartGateway
from tests.gateway.flows import FORM_LINK, WAIT, post_form
from tests.mcp_client import ERAS, Era, text_of
from tests.mcp_tasks import Answer, TasksClient, form_callback

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
ARGS = {"message": "Deploy v2.1?", "schema": APPROVAL, "uiType": "web"}


@dataclass
class ClientCall:
    """An ``elicit`` call from a client whose form answers with ``answer``."""

    answer: Answer
    era: Era
    tasks: TasksClient = field(init=False)
    asked: list[types.ElicitRequestParams] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    dismissed: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[types.CallToolResult] | None = None

    def __post_init__(self) -> None:
        self.tasks = TasksClient(self._answer)
        self.tasks.on_status = self._status

    async def _status(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def _answer(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        async with self.changed:
            self.asked.append(params)
            self.changed.notify_all()
        try:
            return await self.answer(params)
        except asyncio.CancelledError:
            self.dismissed.set()  # the client closes its form: the request ended elsewhere
            raise

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        async with self.changed:
            self.messages.append(message or "")
            self.changed.notify_all()

    async def _run(self, base_url: str, arguments: dict[str, Any]) -> types.CallToolResult:
        async with (
            create_mcp_http_client() as http,
            Client(
                streamable_http_client(f"{base_url}/mcp", http_client=http),
                mode=self.era,
                elicitation_callback=form_callback(self._answer),
                extensions=[self.tasks],
            ) as client,
        ):
            return await client.call_tool("elicit", arguments, progress_callback=self._progress)

    def start(self, base_url: str, arguments: dict[str, Any] = ARGS) -> ClientCall:
        self.task = asyncio.create_task(self._run(base_url, arguments))
        return self

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(condition), WAIT)

    async def form_url(self) -> str:
        """The web form's link, from a progress message (2025) or the task's status message (2026)."""

        def found() -> str | None:
            texts = self.messages + [str(s.get("statusMessage", "")) for s in self.tasks.statuses]
            return next((m.group(1) for t in texts if (m := FORM_LINK.search(t))), None)

        deadline = asyncio.get_running_loop().time() + WAIT
        while (url := found()) is None:
            assert asyncio.get_running_loop().time() < deadline, "no form link seen"
            async with self.changed:
                await asyncio.wait_for(self.changed.wait(), WAIT)
        return url

    async def result(self) -> types.CallToolResult:
        assert self.task is not None
        return await asyncio.wait_for(self.task, WAIT)


def accept(content: dict[str, Any]) -> Answer:
    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=content)

    return answer


def act(action: str) -> Answer:
    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action=action)

    return answer


def hold(released: asyncio.Event, then: Answer) -> Answer:
    """A form the person fills in only once ``released`` is set."""

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        await released.wait()
        return await then(params)

    return answer


async def page_of(url: str) -> str:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        return (await http.get(url)).text


def gateway_for(start_gateway: StartGateway) -> str:
    # A short poll interval paces the 2026 task polling (pollIntervalMs); the 2025 race needs none.
    return start_gateway(HUMANGATE_POLL_INTERVAL="0.2").url


@pytest.mark.parametrize("era", ERAS)
async def test_the_client_form_accepts_with_the_same_message_and_schema(
    start_gateway: StartGateway, era: Era
) -> None:
    url = gateway_for(start_gateway)
    call = ClientCall(accept({"approved": True, "reason": "Looks good to deploy"}), era).start(url)
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true,"reason":"Looks good to deploy"}'
    assert not result.is_error
    assert [(p.message, p.requested_schema) for p in call.asked] == [("Deploy v2.1?", APPROVAL)]  # type: ignore[union-attr]
    if era != "legacy":  # the question rode a task's input requests
        assert [c.status for c in call.tasks.created] == ["working"]
        assert any(s["status"] == "input_required" for s in call.tasks.statuses)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_decline_ends_the_request(start_gateway: StartGateway, era: Era) -> None:
    call = ClientCall(act("decline"), era).start(gateway_for(start_gateway))
    result = await call.result()
    assert text_of(result) == "User declined: No reason given"
    assert result.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_cancel_leaves_the_request_waiting_for_the_channel(
    start_gateway: StartGateway, era: Era
) -> None:
    call = ClientCall(act("cancel"), era).start(gateway_for(start_gateway))
    await call.wait_for(lambda: len(call.asked) == 1)
    form = await call.form_url()
    response = await post_form(form, {"hg-action": "accept", "f.approved": "false"})
    assert response.status_code == 303
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":false}'
    assert len(call.asked) == 1  # dismissed once, never asked again


@pytest.mark.parametrize("era", ERAS)
async def test_a_chat_answer_beats_the_client_form_which_is_then_closed(
    start_gateway: StartGateway, era: Era
) -> None:
    released = asyncio.Event()
    call = ClientCall(hold(released, accept({"approved": False})), era).start(gateway_for(start_gateway))
    await call.wait_for(lambda: len(call.asked) == 1)
    form = await call.form_url()
    await post_form(form, {"hg-action": "accept", "f.approved": "true", "f.reason": "from the chat"})
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true,"reason":"from the chat"}'
    await asyncio.wait_for(call.dismissed.wait(), WAIT)


@pytest.mark.parametrize("era", ERAS)
async def test_the_client_form_beats_the_chat_which_then_shows_the_outcome(
    start_gateway: StartGateway, era: Era
) -> None:
    released = asyncio.Event()
    call = ClientCall(hold(released, accept({"approved": True})), era).start(gateway_for(start_gateway))
    await call.wait_for(lambda: len(call.asked) == 1)
    form = await call.form_url()
    released.set()
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert "Answered in the agent&#39;s client by <strong>anonymous</strong>" in await page_of(form)
    late = await post_form(form, {"hg-action": "accept", "f.approved": "false"})
    assert "already answered by anonymous" in late.text.lower()


@pytest.mark.parametrize("era", ERAS)
async def test_an_answer_outside_the_schema_is_asked_again_with_the_errors(
    start_gateway: StartGateway, era: Era
) -> None:
    answers = iter([{"approved": "yes"}, {"approved": True}])

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=next(answers))

    call = ClientCall(answer, era).start(gateway_for(start_gateway))
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert [p.message.split("\n\n")[0] for p in call.asked] == [
        "Deploy v2.1?",
        "Your answer was not accepted (approved: must be true or false). Please answer again.",
    ]
    assert call.asked[1].message.endswith("\n\nDeploy v2.1?")


async def test_a_2026_client_without_tasks_is_never_asked_in_its_own_form(
    start_gateway: StartGateway,
) -> None:
    url = gateway_for(start_gateway)
    asked: list[types.ElicitRequestParams] = []

    async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approved": False})

    progress: list[str] = []
    seen = asyncio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")
        seen.set()

    async def run() -> types.CallToolResult:
        async with (
            create_mcp_http_client() as http,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=http),
                mode="2026-07-28",
                elicitation_callback=form_callback(answer),
            ) as client,
        ):
            return await client.call_tool("elicit", ARGS, progress_callback=on_progress)  # type: ignore[arg-type]

    task = asyncio.create_task(run())
    await asyncio.wait_for(seen.wait(), WAIT)
    match = FORM_LINK.search(progress[0])
    assert match
    await post_form(match.group(1), {"hg-action": "accept", "f.approved": "true"})
    assert text_of(await asyncio.wait_for(task, WAIT)) == 'User provided: {"approved":true}'
    assert asked == []  # no answer may wait on a form the client holds


@pytest.mark.parametrize("era", ERAS)
async def test_client_elicitation_off_asks_the_channel_only(start_gateway: StartGateway, era: Era) -> None:
    gateway = start_gateway(HUMANGATE_POLL_INTERVAL="0.2", HUMANGATE_CLIENT_ELICITATION="off")
    call = ClientCall(accept({"approved": False}), era).start(gateway.url)
    form = await call.form_url()
    await post_form(form, {"hg-action": "decline", "hg-reason": "not today"})
    result = await call.result()
    assert text_of(result) == "User declined: not today"
    assert call.asked == []
