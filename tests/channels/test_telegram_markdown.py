"""The agent's Markdown in Telegram's HTML (channels.telegram.markdown): the rich request with
Telegram's tags only, the shared hostile table, the cut at 4,096 visible characters, the plain
format, and one post end to end through the fake Bot API (which refuses what Telegram refuses)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest

from channels.base import RenderContext
from channels.document.fit import READ_MORE
from channels.telegram.markdown import JOINER, visible_length
from channels.telegram.message import MAX_TEXT, render_message
from schemas.models import Action, HumanFunction, Outcome, Status
from schemas.settings import Settings, override_settings
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href
from tests.conftest import StartGateway
from tests.fakes.telegram import FakeTelegram, text_problem
from tests.gateway.flows import start_call

NOW = 1_790_000_000.0
CTX = RenderContext(form_url="https://hg.example/f/abc.secret", now=NOW)
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ALLOWED = {"b", "i", "s", "code", "pre", "a", "blockquote"}
"""The tags humangate writes (``pre``'s ``code`` carries the language)."""
_MENTION = re.compile(r"(?<![\w@])@\w")
_COMMAND = re.compile(r"(?<!\S)/\w")
_SCHEME = re.compile(r"(?<![\w+.-])(?!https?:)[A-Za-z][\w+.-]*://", re.IGNORECASE)


def hf_of(message: str, **changes: Any) -> HumanFunction:
    return HumanFunction(
        id="0123456789abcdef",
        requester="deploy-bot",
        channel="telegram",
        message=message,
        request_schema=APPROVAL,
        created_at=NOW,
        deadline=NOW + 300,
        form_secret="s" * 32,
        **changes,
    )


class Read(HTMLParser):
    """A message's HTML as Telegram reads it: its tags (with attributes), its text, and the text
    outside ``code`` and ``pre`` (where Telegram detects mentions and commands)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []
        self.text: list[str] = []
        self.detectable: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs), tuple(self.open)))
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (tag, self.open)
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if not {"code", "pre"} & set(self.open):
            self.detectable.append(data)


def read(html_text: str) -> Read:
    reader = Read()
    reader.feed(html_text)
    reader.close()
    assert reader.open == [], reader.open
    return reader


def shown(reader: Read) -> str:
    return "".join(reader.text).replace(JOINER, "")


def check_tags(reader: Read) -> None:
    """Only Telegram's tags, nested as Telegram allows, every link safe."""
    for tag, attrs, inside in reader.tags:
        assert tag in ALLOWED, tag
        if tag == "code" and inside[-1:] == ("pre",):
            assert set(attrs) <= {"class"} and re.fullmatch(r"language-[\w+#.-]+", attrs.get("class") or "")
        elif tag == "a":
            href = attrs.get("href") or ""
            assert set(attrs) == {"href"} and is_safe_href(href), href
            assert "code" not in inside
        else:
            assert attrs == {}, (tag, attrs)
        assert tag != "blockquote" or "blockquote" not in inside
        above = inside[:-1] if tag == "code" and inside[-1:] == ("pre",) else inside
        assert not {"code", "pre"} & set(above), (tag, inside)  # code and pre hold only text


def message_html(hf: HumanFunction) -> str:
    payload = render_message(hf, CTX)
    assert payload["parse_mode"] == "HTML" and text_problem(payload) == ""
    return str(payload["text"])


def test_the_rich_request_uses_telegrams_tags() -> None:
    text = message_html(hf_of(RICH))
    reader = read(text)
    check_tags(reader)
    tags = {tag for tag, _, _ in reader.tags}
    assert tags == ALLOWED
    assert "<b>Deploy v2.1 to <i>prod</i></b>" in text
    assert '<a href="https://wiki.example.com/runbook">runbook</a> (wiki.example.com)' in text
    assert (
        "\u2022 stop the <code>payments</code> workers" in text
        and "\u00a0\u00a0\u00a01. take a snapshot" in text
    )
    assert "\u2022 <s>restart the cache</s> (not needed)" in text
    assert "<blockquote>Rollback is one command.</blockquote>" in text
    assert '<pre><code class="language-sql">SELECT count(*) FROM orders' in text
    assert '<pre><code class="language-diff">--- a/config.yaml\n+++ b/config.yaml' in text
    assert "<pre>service  | cost | owner\n---------+------+------\npayments | $120 | Ada\n" in text
    assert "\u2014" * 12 in text and '<a href="mailto:ops@example.com">ops@example.com</a>' in text
    words = shown(reader)
    assert all(word in words for word in RICH_WORDS), [w for w in RICH_WORDS if w not in words]
    assert text.endswith("<i>Request 0123456789abcdef</i>")


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_messages_are_safe_on_telegram(case: Hostile) -> None:
    started = time.perf_counter()
    text = message_html(hf_of(case.text))
    assert time.perf_counter() - started < 1.0
    reader = read(text)
    check_tags(reader)
    words = shown(reader)
    cut = READ_MORE in words and f'<a href="{CTX.form_url}">' in text
    for visible in case.visible:
        # A message longer than Telegram's 4,096 is cut and links to the page showing all of it.
        assert visible in words or (cut and visible_length(text) > MAX_TEXT // 2), (visible, words[:300])
    for host in case.hosts:
        assert host in words
    detectable = "".join(reader.detectable)
    assert not _MENTION.search(detectable), detectable[:300]
    assert not _COMMAND.search(detectable), detectable[:300]
    assert not _SCHEME.search(detectable), detectable[:300]
    assert visible_length(text) <= MAX_TEXT


def test_a_long_diff_is_cut_at_a_line_and_links_to_the_web_form() -> None:
    lines = [f"-line {i}: {'x' * 40}" for i in range(700)]
    message = "Apply this?\n\n```diff\n" + "\n".join(lines) + "\n```"
    assert len(message) > 30 * 1024
    text = message_html(hf_of(message))
    reader = read(text)
    check_tags(reader)
    assert visible_length(text) <= MAX_TEXT
    assert f'<a href="{CTX.form_url}">{READ_MORE}</a>' in text
    assert "Asked by deploy-bot" in text and text.endswith("<i>Request 0123456789abcdef</i>")
    (pre,) = text.split("<pre>")[1:]
    kept = pre.split("</code></pre>")[0].removeprefix('<code class="language-diff">').split("\n")
    assert 40 < len(kept) < len(lines) and kept == lines[: len(kept)]  # whole lines, in order
    ended = hf_of(
        message,
        status=Status.ACCEPTED,
        outcome=Outcome(status=Status.ACCEPTED, action=Action.ACCEPT, via="telegram", at=NOW + 5, by="Ada"),
    )
    after = message_html(ended)  # the outcome edit keeps the rendering and the cut
    assert READ_MORE in after and "language-diff" in after and "Ada" in after


def test_the_link_after_a_cut_is_text_where_telegram_would_refuse_it() -> None:
    local = RenderContext(form_url="http://localhost:8000/f/abc.secret", now=NOW)
    payload = render_message(hf_of("word " * 2000), local)
    assert (
        text_problem(payload) == "" and f"{READ_MORE}: http://localhost:8000/f/abc.secret" in payload["text"]
    )
    assert "<a " not in payload["text"]


@pytest.fixture
def plain_format() -> Iterator[None]:
    override_settings(Settings(message_format="plain", _env_file=None))
    yield
    override_settings(None)


@pytest.mark.usefixtures("plain_format")
def test_the_plain_format_shows_the_text_as_written() -> None:
    text = message_html(hf_of(RICH + "\n\nping @durov"))
    reader = read(text)
    assert {tag for tag, _, _ in reader.tags} <= {"b", "i"}
    assert "## Deploy **v2.1** to *prod*" in shown(reader) and "| payments | $120 | Ada |" in shown(reader)
    assert not _MENTION.search("".join(reader.detectable))


async def test_a_rich_request_and_a_long_diff_post_and_the_outcome_keeps_the_rendering(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    """End to end: the fake refuses tags Telegram does not know, unbalanced ones and texts over
    4,096 visible characters, as Telegram does; both requests post, and the approval's edit keeps
    the rich rendering."""
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": RICH, "schema": APPROVAL, "uiType": "telegram"})
    posted = await telegram.message_where(lambda m: "Rollback" in m["text"] and m["reply_to"] is None)
    assert '<pre><code class="language-diff">' in posted["html"] and "<blockquote>" in posted["html"]
    telegram.tap(posted, "Approve")
    assert not (await call.result()).is_error
    ended = await telegram.message_where(
        lambda m: m["message_id"] == posted["message_id"] and "Approved by" in m["text"]
    )
    check_tags(read(ended["html"]))
    assert "<blockquote>Rollback is one command.</blockquote>" in ended["html"]
    long = "```diff\n" + "\n".join(f"+new {i} {'y' * 40}" for i in range(600)) + "\n```"
    other = start_call(gateway.url, {"message": long, "schema": APPROVAL, "uiType": "telegram"})
    big = await telegram.message_where(lambda m: "+new 0 " in m["text"] and m["reply_to"] is None)
    assert READ_MORE in big["text"] and len(big["text"]) <= MAX_TEXT
    assert not [c for c in telegram.method_calls("sendMessage") if c.json() and "too long" in str(c.json())]
    other.task.cancel()
