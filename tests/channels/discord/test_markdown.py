"""The agent's Markdown on Discord (docs/rendering.md): the rich request in native Discord markdown,
the shared hostile table, the cut of a long message, the plain format, and ``allowed_mentions`` on
every request the fake Discord receives."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from channels.discord.embed import EMBED_TOTAL, render_message
from channels.discord.rest import DiscordRest
from channels.document.fit import READ_MORE
from schemas.settings import Settings, override_settings
from tests.channels.discord.cases import APPROVAL, CTX, hf_of
from tests.channels.discord.flows import Transport, ask, outcome_of
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href
from tests.conftest import StartGateway
from tests.fakes.discord import APPLICATION_ID, CHANNEL_ID, TOKEN, FakeDiscord
from tests.fakes.discord_interactions import buttons, click

MASKED = re.compile(r"(?<!\\)\[((?:\\.|[^\]\\])*)\]\(<([^>]*)>\)")
"""A masked link as we write them: ``[label](<address>)``, its ``[`` not escaped."""
AUTOLINK = re.compile(r"(?<!\\)<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
CODE = re.compile(r"```.*?```|(`+).+?\1", re.DOTALL)
READ_MORE_LINK = f"**[{READ_MORE}](<{CTX.form_url}>)**"


def description(message: str) -> str:
    payload = render_message(hf_of(APPROVAL, message), CTX)
    assert payload["allowed_mentions"] == {"parse": []}
    text: str = payload["embeds"][0]["description"]
    return text


def seen(markdown: str) -> str:
    """Roughly what a person reads: links as their labels, escapes and zero-width spaces gone."""
    text = MASKED.sub(lambda m: m.group(1), markdown)
    text = AUTOLINK.sub(lambda m: m.group(1), text)
    return re.sub(r"\\([^\w\s])", r"\1", text).replace("\u200b", "")


def links(markdown: str) -> list[str]:
    """Every link address: masked links' and ``<address>`` links'."""
    masked = [m.group(2) for m in MASKED.finditer(markdown)]
    return masked + [m.group(1) for m in AUTOLINK.finditer(MASKED.sub("", markdown))]


def outside_code(markdown: str) -> str:
    return CODE.sub("", markdown)


def test_the_rich_request_is_native_discord_markdown() -> None:
    text = description(RICH)
    blocks = text.split("\n\n")
    assert blocks[0] == "**Deploy v2.1 to *prod***"  # a heading is a bold line in an embed
    assert blocks[1] == (
        "The plan, as agreed in the [runbook](<https://wiki.example.com/runbook>) (wiki.example.com):"
    )
    assert blocks[2].split("\n") == [
        "- stop the `payments` workers",
        "- run the migration",
        "  1. take a snapshot",
        "  2. apply `0042_add_index`",
        "- ~~restart the cache~~ (not needed)",
    ]
    assert blocks[3] == "> Rollback is one command."
    assert blocks[4] == "```sql\nSELECT count(*) FROM orders WHERE status = 'open';\n```"
    diff = blocks[5].split("\n")
    assert diff[0] == "```diff" and "-replicas: 2" in diff and "+replicas: 4" in diff and diff[-1] == "```"
    table = blocks[6].split("\n")
    assert table[0] == "```" and table[1].split() == ["service", "cost", "owner"]
    assert table[3] == "payments  $120  Ada" and table[4] == "search     $80  Bo"  # cost right-aligned
    assert blocks[7] == "\u2500" * 20
    assert blocks[8] == "Questions: ops@example.com"
    assert all(word in seen(text) for word in RICH_WORDS)
    assert links(text) == ["https://wiki.example.com/runbook"]


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_messages_show_as_written_and_nothing_fires(case: Hostile) -> None:
    started = time.perf_counter()
    text = description(case.text)
    assert time.perf_counter() - started < 1.0
    shown = seen(text)
    cut = text.endswith(READ_MORE_LINK)  # longer than an embed holds: the rest is a click away
    for words in (*case.visible, *case.hosts):
        assert words in shown or (cut and len(case.text) > 4096), words
    assert all(is_safe_href(href) for href in links(text)), links(text)
    prose = outside_code(text)
    assert "@everyone" not in prose and "@here" not in prose
    assert re.search(r"(?<!\\)<[@#!/]|(?<!\\)<t:", prose) is None
    # Every [ the agent wrote is escaped: the only masked links are ours, to checked addresses.
    for match in MASKED.finditer(text):
        assert match.group(2).startswith(("https://", "http://"))


def test_a_second_masked_link_is_no_longer_live() -> None:
    text = description("[docs](https://docs.example.com) then [the same docs](https://evil.example/login)")
    assert MASKED.findall(text) == [
        ("docs", "https://docs.example.com"),
        ("the same docs", "https://evil.example/login"),
    ]
    assert text.endswith("(evil.example)")
    # The literal text form of the bug: an agent's own [label](address) left as text stays escaped.
    plain = description("\\[a](https://a.example) and [b](javascript:x) [c](https://c.example")
    assert all(is_safe_href(href) for href in links(plain))


def test_a_long_diff_is_cut_at_a_line_with_the_link_to_the_whole_request() -> None:
    lines = [f"{'+-'[i % 2]}line {i} of the change to config.yaml" for i in range(900)]
    message = "Apply this change?\n\n```diff\n" + "\n".join(lines) + "\n```"
    assert len(message) > 30 * 1024
    payload = render_message(hf_of(APPROVAL, message), CTX)
    embed = payload["embeds"][0]
    text = embed["description"]
    assert len(text) <= 4096 and text.endswith(READ_MORE_LINK)
    body = text.removesuffix(READ_MORE_LINK).rstrip()
    assert body.startswith("Apply this change?\n\n```diff\n+line 0 of") and body.endswith("\n```")
    kept = body.split("\n")[3:-1]
    assert kept == lines[: len(kept)] and len(kept) > 50  # whole lines, in order
    fields = sum(len(f["name"]) + len(f["value"]) for f in embed["fields"])
    assert len(embed["title"]) + len(text) + fields + len(embed["footer"]["text"]) <= EMBED_TOTAL


def test_the_plain_format_shows_the_text_as_written(settings: Settings) -> None:
    override_settings(settings.model_copy(update={"message_format": "plain"}))
    text = description("Deploy **v2.1**\n- to `prod`\n[x](https://evil.example) @everyone")
    assert seen(text) == "Deploy **v2.1**\n- to `prod`\n[x](https://evil.example) @everyone"
    assert MASKED.search(text) is None and "@everyone" not in text


def message_requests(discord: FakeDiscord) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every message humangate sent the fake: posts, edits, webhook messages, interaction callbacks
    that carry a message."""
    for call in discord.server.calls:
        body = call.json() if call.method in ("POST", "PATCH") else None
        if not isinstance(body, dict):
            continue
        if call.path.endswith("/callback"):
            if body.get("type") in (4, 7):
                yield call.path, body["data"]
        elif "/messages" in call.path or call.path.startswith("/api/v10/webhooks/"):
            yield call.path, body


async def test_every_message_sent_to_discord_mentions_nobody_but_whom_a_step_names(
    start_gateway: StartGateway, discord: FakeDiscord, transport: Transport
) -> None:
    gateway = start_gateway(**transport.env())
    call, posted = await ask(gateway, discord, RICH + "\n\n@everyone <@123456789012345678>", APPROVAL)
    assert "**Deploy v2.1 to *prod***" in posted["embeds"][0]["description"]
    replies = [await transport.send(gateway, click(posted, buttons(posted)["Approve"]))]
    await call.result()
    edit = await discord.edited(posted["id"], lambda b: bool(outcome_of(b)))
    assert "```diff" in edit["embeds"][0]["description"]  # the ended message keeps the rendering
    replies.append(await transport.send(gateway, click(posted, buttons(posted)["Approve"])))  # a note
    sent = list(message_requests(discord))
    assert len(sent) >= (4 if transport.mode == "gateway" else 2)
    for path, body in sent:
        assert body.get("allowed_mentions", {}).get("parse") == [], path
    for reply in replies:
        if reply.get("type") in (4, 7):
            assert reply["data"]["allowed_mentions"]["parse"] == []


async def test_each_rest_send_sets_allowed_mentions(discord_server: FakeDiscord) -> None:
    rest = DiscordRest(discord_server.api_url, TOKEN, CHANNEL_ID)
    try:
        posted = await rest.post(CHANNEL_ID, {"content": "hi @everyone"})
        await rest.edit(CHANNEL_ID, str(posted["id"]), {"content": "edited"})
        await rest.followup(APPLICATION_ID, "token-1", {"content": "late"})
        await rest.edit_original(APPLICATION_ID, "token-1", {"content": "late edit"})
    finally:
        await rest.close()
    sent = list(message_requests(discord_server))
    assert len(sent) == 4
    assert all(body["allowed_mentions"] == {"parse": []} for _, body in sent)


@pytest.fixture
def discord_server() -> Iterator[FakeDiscord]:
    fake = FakeDiscord()
    fake.server.start()
    yield fake
    fake.server.stop()
