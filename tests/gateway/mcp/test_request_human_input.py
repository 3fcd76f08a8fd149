"""``request_human_input``: one free-text reply, returned verbatim; canceled after the idle
timeout unless a person starts answering, which gives it the caller's full time (web form and Slack
modal through the fakes, official MCP client in both eras).
See docs/tools.md#request_human_input."""

from __future__ import annotations

import re

import httpx
import pytest

from gateway.mcp.request_human_input import parse_arguments
from gateway.mcp.texts import IDLE_NOTE, STARTED_NOTE
from schemas.errors import InvalidRequestError
from schemas.settings import Settings
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, send, submission
from tests.gateway.flows import WAIT, post_form, start_call
from tests.mcp_client import ERAS, Era, call_elicit, text_of

PROMPT = "Which authentication approach should I use?"
REPLY = "  Use JWT with our existing auth service.\nKeep sessions for the admin UI. "


def test_the_prompt_is_the_message_and_one_required_text_the_schema() -> None:
    question = parse_arguments({"prompt": PROMPT, "uiType": "web"}, Settings(idle_timeout=45, _env_file=None))
    assert (question.channel, question.message, question.idle_timeout) == ("web", PROMPT, 45)
    assert question.schema == {
        "type": "object",
        "properties": {"reply": {"type": "string", "title": "Your reply"}},
        "required": ["reply"],
    }
    with pytest.raises(InvalidRequestError, match=r"^Invalid arguments: prompt: is required$"):
        parse_arguments({}, Settings(_env_file=None))
    with pytest.raises(
        InvalidRequestError, match=re.escape("unknown argument(s): message; prompt: must be a string")
    ):
        parse_arguments({"prompt": 3, "message": "x"}, Settings(_env_file=None))


@pytest.mark.parametrize("era", ERAS)
async def test_opening_the_form_extends_the_deadline_and_the_reply_returns_verbatim(
    start_gateway: StartGateway, era: Era
) -> None:
    gateway = start_gateway(HUMANGATE_IDLE_TIMEOUT="4", HUMANGATE_POLL_INTERVAL="0.5")
    call = start_call(gateway.url, {"prompt": PROMPT, "uiType": "web"}, era=era, tool="request_human_input")
    form = await call.form_url()
    _, total, message = call.progress[0]
    assert total == 4 and message is not None and IDLE_NOTE in message
    async with httpx.AsyncClient(timeout=WAIT) as client:
        assert (await client.get(form)).status_code == 200  # a person opens the form
    started = await call.wait_for_message(lambda text: STARTED_NOTE in text)
    assert "left" in started
    assert call.progress[-1][1] == 180  # the anonymous caller's full timeout
    assert (await post_form(form, {"hg-action": "accept", "f.reply": REPLY})).status_code == 303
    result = await call.result()
    assert text_of(result) == f"User provided: {REPLY}"
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["content"] == {"reply": REPLY}


async def test_nobody_starting_cancels_it_after_the_idle_timeout(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_IDLE_TIMEOUT="2", HUMANGATE_POLL_INTERVAL="0.5")
    result = await call_elicit(gateway.url, {"prompt": PROMPT, "uiType": "web"}, tool="request_human_input")
    assert text_of(result) == "User canceled: Request timed out after 2 seconds"
    assert result.is_error
    bad = await call_elicit(gateway.url, {"prompt": ""}, tool="request_human_input")
    assert bad.is_error and text_of(bad) == "Invalid arguments: prompt: must not be empty"


async def test_opening_the_slack_modal_extends_the_deadline(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env(HUMANGATE_IDLE_TIMEOUT="5", HUMANGATE_POLL_INTERVAL="0.5"))
    call = start_call(gateway.url, {"prompt": PROMPT}, tool="request_human_input")  # slack by default
    (message,) = await slack.posted()
    await call.wait_for_progress(1, IDLE_NOTE)
    await send(gateway.url, click(message, "hg:respond", "U1", slack.url))
    view = await slack.opened_view()
    await call.wait_for_message(lambda text: STARTED_NOTE in text)
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert block["element"]["type"] == "plain_text_input" and block["element"]["multiline"] is True
    reply = {block["block_id"]: {"type": "plain_text_input", "value": "Use JWT"}}
    assert (await send(gateway.url, submission(view, reply, "U1"))).status_code == 200
    assert text_of(await call.result()) == "User provided: Use JWT"
