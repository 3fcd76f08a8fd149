"""The agent's Markdown on Teams cards (channels.teams.markdown): the rich request in native elements,
the shared hostile table, the cut at Teams' card size, the plain format, and one post end to end."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from channels.document.fit import READ_MORE
from channels.teams.card import MAX_ACTIVITY_BYTES, activity_size, render_card, summary_of
from channels.teams.markdown import JOINER
from schemas.models import Action, Outcome, Status
from schemas.settings import Settings, override_settings
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href
from tests.channels.teams.flows import APPROVAL, ask, outcome_of
from tests.channels.teams.test_card import CTX, NOW, hf_of
from tests.conftest import StartGateway
from tests.fakes.teams import FakeTeams
from tests.fakes.teams_activities import actions, card_of_posted, invoke, send
from tests.fakes.teams_cards import card_problems

_LINK = re.compile(r"(?<!\\)\]\(([^)\s]*)\)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def walk(elements: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every element of a body, depth first, containers' and tables' children included."""
    for element in elements:
        yield element
        yield from walk(element.get("items") or [])
        yield from walk(element.get("columns") or [])
        for row in element.get("rows") or []:
            yield from walk(row.get("cells") or [])


def markdown_texts(card: Mapping[str, Any]) -> list[str]:
    """The Markdown of every TextBlock of a card."""
    return [e["text"] for e in walk(card["body"]) if e.get("type") == "TextBlock"]


def read(markdown: str) -> str:
    """What a person reads of Teams markdown: links as their labels, escapes and joiners gone."""
    text = _LINK.sub("]", markdown).replace(JOINER, "")
    return _ESCAPE.sub(r"\1", text)


def shown(card: Mapping[str, Any]) -> str:
    """All the text a card shows, one element a line."""
    lines: list[str] = []
    for element in walk(card["body"]):
        kind = element.get("type")
        if kind == "TextBlock":
            lines.append(read(element["text"]))
        elif kind == "RichTextBlock":
            lines.append("".join(run["text"] for run in element["inlines"]).replace("\u00a0", " "))
        elif kind == "CodeBlock":
            lines.append(element["codeSnippet"])
    return "\n".join(lines)


def of_type(card: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [element for element in walk(card["body"]) if element.get("type") == kind]


def test_the_rich_request_is_native_card_elements() -> None:
    card = render_card(hf_of(APPROVAL, RICH), CTX)
    assert card_problems(card) == []
    texts = markdown_texts(card)
    heading = next(e for e in walk(card["body"]) if e.get("text", "").startswith("Deploy"))
    assert heading["weight"] == "Bolder" and heading["size"] == "Medium"
    assert heading["text"] == "Deploy **v2.1** to _prod_"
    assert any("[runbook](https://wiki.example.com/runbook) (wiki.example.com)" in t for t in texts)
    assert "- stop the `payments` workers\r- run the migration" in texts
    (nested,) = of_type(card, "ColumnSet")
    assert nested["columns"][0]["items"] == []
    assert nested["columns"][1]["items"][0]["text"] == "1. take a snapshot\r2. apply `0042\\_add\\_index`"
    assert "- ~~restart the cache~~ (not needed)" in texts
    (quote,) = [c for c in of_type(card, "Container") if c.get("style") == "emphasis"]
    assert quote["items"][0]["text"] == "Rollback is one command."
    (code,) = of_type(card, "CodeBlock")
    assert code["language"] == "SQL" and code["codeSnippet"].startswith("SELECT count(*)")
    assert code["fallback"]["inlines"][0]["fontType"] == "Monospace"
    colours = {
        run["text"]: run.get("color") for block in of_type(card, "RichTextBlock") for run in block["inlines"]
    }
    assert colours["+replicas: 4"] == "Good" and colours["-replicas: 2"] == "Attention"
    assert colours["@@ -1,2 +1,2 @@"] == "Accent" and colours["\u00a0region: eu-west-1"] is None
    (table,) = of_type(card, "Table")
    assert [c.get("horizontalCellContentAlignment") for c in table["columns"]] == ["Left", "Right", None]
    assert table["firstRowAsHeader"] is True and len(table["rows"]) == 3
    last = next(e for e in walk(card["body"]) if "ops@example.com" in e.get("text", ""))
    assert last["separator"] is True and "(mailto:ops@example.com)" in last["text"]
    text = shown(card)
    assert all(word in text for word in RICH_WORDS), [w for w in RICH_WORDS if w not in text]


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_messages_are_safe_on_teams(case: Hostile) -> None:
    started = time.perf_counter()
    hf = hf_of(APPROVAL, case.text, mention=["teams:Everyone"])
    card = render_card(hf, CTX)
    took = time.perf_counter() - started
    assert took < 1.0
    assert card_problems(card) == [] and activity_size(card, summary_of(hf)) <= MAX_ACTIVITY_BYTES
    text = shown(card)
    for words in case.visible:
        assert words in text, (words, text[:300])
    for host in case.hosts:
        assert host in text
    # Links: only the model's (safe) ones, in TextBlocks and in actions.
    for markdown in markdown_texts(card):
        assert all(is_safe_href(url) for url in _LINK.findall(markdown)), markdown
        assert "{{" not in markdown or ("{{DATE(" in markdown and "DATE(" not in case.text)
    urls = [a["url"] for a in walk_actions(card) if a["type"] == "Action.OpenUrl"]
    assert all(is_safe_href(url) for url in urls)
    # Mentions: the only <at> is the one humangate adds, with its entity.
    entities = card["msteams"]["entities"]
    body = json.dumps(card["body"][1:])
    assert "<at>" not in body and len(entities) == 1
    assert card["body"][0]["text"].count("<at>") == 1


def walk_actions(card: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from card.get("actions") or []
    for element in walk(card["body"]):
        yield from element.get("actions") or []


def test_a_long_diff_is_cut_at_a_line_and_links_to_the_web_form() -> None:
    lines = [f"+line {i}: {'x' * 40}" for i in range(700)]
    message = "Apply this?\n\n```diff\n" + "\n".join(lines) + "\n```"
    assert len(message) > 30 * 1024
    hf = hf_of(APPROVAL, message)
    card = render_card(hf, CTX)
    assert card_problems(card) == [] and activity_size(card, summary_of(hf)) <= MAX_ACTIVITY_BYTES
    assert list(actions(card)) == ["Approve", "Decline…", "Cancel"]  # the form, not the short card
    more = next(e for e in walk(card["body"]) if READ_MORE in e.get("text", ""))
    assert more["text"] == f"[{READ_MORE}]({CTX.form_url})"
    kept = [
        r["inlines"][0]["text"]
        for r in of_type(card, "RichTextBlock")
        if r["inlines"][0]["text"][:5] == "+line"
    ]
    assert 50 < len(kept) < len(lines) and kept == lines[: len(kept)]  # whole lines, in order
    ended = hf.model_copy(
        update={
            "status": Status.ACCEPTED,
            "outcome": Outcome(
                status=Status.ACCEPTED,
                action=Action.ACCEPT,
                via="teams",
                at=NOW + 5,
                by="Ada",
                content={"approved": True},
            ),
        }
    )
    after = render_card(ended, CTX)  # the outcome edit keeps the rendering and the cut
    assert (
        activity_size(after, summary_of(ended)) <= MAX_ACTIVITY_BYTES
        and outcome_of(after) == "Approved by Ada"
    )
    assert any(READ_MORE in t for t in markdown_texts(after)) and of_type(after, "Container")


@pytest.fixture
def plain_format() -> Iterator[None]:
    override_settings(Settings(message_format="plain", _env_file=None))
    yield
    override_settings(None)


@pytest.mark.usefixtures("plain_format")
def test_the_plain_format_shows_the_text_as_written() -> None:
    card = render_card(hf_of(APPROVAL, RICH), CTX)
    assert card_problems(card) == [] and not of_type(card, "CodeBlock") and not of_type(card, "Table")
    text = shown(card)
    assert "## Deploy **v2.1** to *prod*" in text and "| payments | $120 | Ada |" in text
    assert not any(_LINK.search(t) for t in markdown_texts(card))


async def test_a_rich_request_posts_through_the_connector_and_is_approved(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    """End to end: the rich request and a 30 KiB diff post (the fake refuses a card over 28 KB or
    with an element Teams would not show), and the rich one's outcome edit keeps the rendering."""
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, RICH, APPROVAL)
    card = card_of_posted(posted)
    assert of_type(card, "CodeBlock") and of_type(card, "Table") and "Rollback" in shown(card)
    response = await send(gateway.url, teams, invoke(teams, posted, "Approve"))
    assert response.status_code == 200, response.text
    assert not (await call.result()).is_error
    edited = await teams.edited(str(posted["id"]), lambda c: bool(outcome_of(c)))
    assert of_type(edited, "Table") and all(word in shown(edited) for word in RICH_WORDS)
    long = "```diff\n" + "\n".join(f"-old {i} {'y' * 40}" for i in range(600)) + "\n```"
    other, big = await ask(gateway, teams, long, APPROVAL)
    big_card = card_of_posted(big)
    assert any(READ_MORE in t for t in markdown_texts(big_card)) and "Approve" in actions(big_card)
    other.task.cancel()
