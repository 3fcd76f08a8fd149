"""The agent's Markdown on Slack (docs/rendering.md): the rich request as ``rich_text`` blocks, the
shared hostile table, the cut of a long message, the plain format, and a post through the fake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from channels.document.fit import READ_MORE
from channels.slack.blocks import message_payload
from channels.slack.modal import form_view
from schemas.settings import Settings, override_settings
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href
from tests.channels.slack.test_channel import FORM_URL, make_hf, text_objects
from tests.channels.slack.test_flows import APPROVAL, rich_text
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.gateway.flows import start_call

MENTION_ELEMENTS = {"user", "usergroup", "broadcast", "channel", "team"}
"""Rich text elements that notify someone: never written from agent text."""


def elements(value: Any) -> Iterator[dict[str, Any]]:
    """Every element (at any depth) of some blocks."""
    if isinstance(value, dict):
        yield value
        for child in value.get("elements", []):
            yield from elements(child)
    elif isinstance(value, list):
        for child in value:
            yield from elements(child)


def message_of(text: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = message_payload(make_hf(message=text), FORM_URL)["blocks"]
    return [block for block in blocks if block["type"] in ("rich_text", "divider")]


def test_the_rich_request_is_native_rich_text() -> None:
    blocks = message_of(RICH)
    assert [block["type"] for block in blocks] == ["rich_text", "divider", "rich_text"]
    first = blocks[0]["elements"]
    kinds = [element["type"] for element in first]
    assert kinds == [
        "rich_text_section",  # the heading, bold
        "rich_text_section",
        "rich_text_list",
        "rich_text_list",  # the nested numbered list, one indent deeper
        "rich_text_list",
        "rich_text_quote",
        "rich_text_preformatted",  # SQL
        "rich_text_preformatted",  # the diff, one change per line
        "rich_text_preformatted",  # the table, aligned
    ]
    heading = [e for e in first[0]["elements"] if e["text"].strip()]
    assert all(e["style"]["bold"] for e in heading) and heading[-1]["style"] == {"bold": True, "italic": True}
    link = next(e for e in elements(first[1]) if e["type"] == "link")
    assert link == {"type": "link", "url": "https://wiki.example.com/runbook", "text": "runbook"}
    assert [(e["style"], e["indent"]) for e in first[2:5]] == [("bullet", 0), ("ordered", 1), ("bullet", 0)]
    styles = [e.get("style") for e in elements(first[2:5]) if e["type"] == "text"]
    assert {"code": True} in styles and {"strike": True} in styles
    diff = first[7]["elements"][0]["text"].split("\n")
    assert "-replicas: 2" in diff and "+replicas: 4" in diff
    assert first[8]["elements"][0]["text"].split("\n")[2] == "payments  $120  Ada"
    shown = "".join(rich_text(block) for block in blocks if block["type"] == "rich_text")
    assert all(word in shown for word in RICH_WORDS)


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_messages_show_as_written_and_nothing_fires(case: Hostile) -> None:
    started = time.perf_counter()
    payload = message_payload(make_hf(message=case.text), FORM_URL)
    assert time.perf_counter() - started < 1.0
    blocks = payload["blocks"]
    found = list(elements(blocks))
    assert not [e for e in found if e.get("type") in MENTION_ELEMENTS]
    assert all(is_safe_href(e["url"]) for e in found if e.get("type") == "link")
    for obj in text_objects(blocks):  # mrkdwn holds only our own date tokens
        assert obj["type"] != "mrkdwn" or obj["text"].startswith(("Answer by <!date^", "<!date^"))
    shown = "".join(rich_text(block) for block in blocks if block["type"] == "rich_text")
    cut = READ_MORE in shown
    for words in (*case.visible, *case.hosts):
        assert words in shown or (cut and len(case.text) > 9000), words
    assert "<" not in payload["text"] and ">" not in payload["text"]  # the notification is escaped


def test_a_long_diff_is_cut_at_a_line_with_the_link_to_the_whole_request() -> None:
    lines = [f"{'+-'[i % 2]}line {i} of the change to config.yaml" for i in range(900)]
    message = "Apply this change?\n\n```diff\n" + "\n".join(lines) + "\n```"
    assert len(message) > 30 * 1024
    payload = message_payload(make_hf(message=message), FORM_URL)
    (rich,) = [block for block in payload["blocks"] if block["type"] == "rich_text"]
    *shown, more = rich["elements"]
    kept = shown[-1]["elements"][0]["text"].split("\n")
    assert kept == lines[: len(kept)] and len(kept) > 100
    assert more["elements"][0] == {
        "type": "link",
        "url": FORM_URL,
        "text": READ_MORE,
        "style": {"bold": True},
    }
    view = form_view(make_hf({"type": "object", "properties": {"a": {"type": "string"}}}, message), FORM_URL)
    assert view["blocks"][0]["elements"][-1]["elements"][0]["text"] == READ_MORE


def test_the_plain_format_shows_the_text_as_written(settings: Settings) -> None:
    override_settings(settings.model_copy(update={"message_format": "plain"}))
    text = "Deploy **v2.1**\n- to `prod`\n[x](https://evil.example) <!channel>"
    (rich,) = message_of(text)
    assert rich_text(rich) == text
    assert [e.get("style") for e in elements(rich) if e["type"] == "text"] == [None]


async def test_a_rich_and_a_30_kib_request_post_through_the_fake_slack(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env())
    diff = "\n".join(f"+line {i:04} of the change to config" for i in range(920))
    assert 30 * 1024 < len(diff) < 32 * 1024  # HUMANGATE_MAX_MESSAGE_BYTES is 32 KiB
    calls = [
        start_call(gateway.url, {"message": RICH, "schema": APPROVAL, "uiType": "slack"}),
        start_call(gateway.url, {"message": f"```diff\n{diff}\n```", "schema": APPROVAL, "uiType": "slack"}),
    ]
    posted = await slack.posted(2)
    texts = {"".join(rich_text(b) for b in m["blocks"] if b["type"] == "rich_text"): m for m in posted}
    rich = next(m for text, m in texts.items() if "Deploy v2.1" in text)
    assert any(b["type"] == "divider" for b in rich["blocks"])
    assert "**" not in rich["text"] and rich["text"].startswith("anonymous asks: Deploy v2.1 to prod")
    long = next(text for text in texts if "line 0000 of" in text)
    assert long.endswith(READ_MORE)
    for call in calls:
        call.task.cancel()
