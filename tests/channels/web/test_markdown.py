"""The HTML renderer of agent text (channels/web/markdown.py) on the web form, the inbox and the
email's HTML: the rich request's structure element by element, the shared hostile table on every
HTML surface, and the plain format shown as written."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from channels.email.letter import request_letter
from channels.web.inbox import item_of, render_inbox
from channels.web.markdown import message_html
from channels.web.page import render_page
from schemas.settings import Settings, override_settings
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href
from tests.channels.web.test_channel import CTX, NONCE, NOW, Node, make_hf, parse_html

FORM_URL = "https://hg.example.org/f/hf1.secret"


def web_form(text: str) -> Node:
    return parse_html(render_page(make_hf(message=text), CTX, nonce=NONCE)).one(id="hg-message")


def inbox(text: str) -> Node:
    hf = make_hf(message=text)
    page = render_inbox(NONCE, operator="ada", csrf="c", items=[item_of(hf)], now=NOW, current=hf)
    return parse_html(page).one(id="hg-message")


def email_html(text: str) -> Node:
    letter = request_letter(make_hf(message=text, channel="email"), FORM_URL, NOW)
    return parse_html(letter.html.removeprefix("<!DOCTYPE html>"))


def fragment(text: str) -> Node:
    return parse_html(message_html(text))


HTML_SURFACES: dict[str, Callable[[str], Node]] = {"web form": web_form, "inbox": inbox, "email": email_html}


def test_the_rich_request_has_every_construct_as_its_element() -> None:
    doc = fragment(RICH)
    heading = doc.one("h4")  # ## shifted two levels, under the page's h1 and h2
    assert heading.words == "Deploy v2.1 to prod"
    assert heading.one("strong").words == "v2.1" and heading.one("em").words == "prod"
    runbook = doc.all("a")[0]
    assert (runbook["href"], runbook.words) == ("https://wiki.example.com/runbook", "runbook")
    assert runbook["rel"] == "noopener noreferrer nofollow" and runbook["target"] == "_blank"
    assert "(wiki.example.com)" in doc.all("p")[0].words
    (bullets,) = doc.all("ul")
    items = [li for li in bullets.children if isinstance(li, Node)]
    assert [li.tag for li in items] == ["li", "li", "li"]
    assert items[0].one("code").words == "payments"
    steps = items[1].one("ol")
    assert [li.words for li in steps.all("li")] == ["take a snapshot", "apply 0042_add_index"]
    assert not steps.has("start")
    assert items[2].one("del").words == "restart the cache"
    assert doc.one("blockquote").one("p").words == "Rollback is one command."
    sql, diff = doc.all("pre")
    assert sql.one("code")["class"] == "language-sql" and "SELECT count(*)" in sql.text
    assert diff["class"] == "hg-diff" and diff.one("code")["class"] == "language-diff"
    lines = [(span["class"], span.text.rstrip("\n")) for span in diff.all("span")]
    assert lines == [
        ("hg-hunk", "--- a/config.yaml"),
        ("hg-hunk", "+++ b/config.yaml"),
        ("hg-hunk", "@@ -1,2 +1,2 @@"),
        ("hg-removed", "-replicas: 2"),
        ("hg-added", "+replicas: 4"),
        ("hg-context", " region: eu-west-1"),
    ]
    table = doc.one("div", class_="hg-table").one("table")
    assert [(th.words, th.attrs.get("class")) for th in table.one("thead").all("th")] == [
        ("service", "hg-left"),
        ("cost", "hg-right"),
        ("owner", None),
    ]
    rows = [[td.words for td in tr.all("td")] for tr in table.one("tbody").all("tr")]
    assert rows == [["payments", "$120", "Ada"], ["search", "$80", "Bo"]]
    assert doc.all("hr") and doc.all("a")[-1]["href"] == "mailto:ops@example.com"
    assert not [node for node in doc.all() if "style" in node.attrs]  # the pages' CSP blocks inline styles


@pytest.mark.parametrize("surface", HTML_SURFACES)
def test_the_rich_request_reads_on_every_html_surface(surface: str) -> None:
    doc = HTML_SURFACES[surface](RICH)
    for word in RICH_WORDS:
        assert word in doc.words
    assert doc.all("strong") and doc.all("table") and doc.all("ol") and doc.all("span", class_="hg-added")


def test_an_ordered_list_keeps_its_start_and_a_deep_heading_stops_at_h6() -> None:
    doc = fragment("3. three\n4. four\n\n##### five\n\n###### six")
    assert doc.one("ol")["start"] == "3"
    assert [node.tag for node in doc.all() if node.tag.startswith("h")] == ["h6", "h6"]


def test_a_fence_language_is_one_safe_class() -> None:
    doc = fragment('```x" onmouseover="alert(1)\ncode\n```\n\n```Py+3\nok\n```')
    first, second = doc.all("code")
    assert not first.has("class") and second["class"] == "language-py+3"


def shown_ok(doc: Node, case: Hostile) -> None:
    """What every HTML surface guarantees for a hostile message."""
    for node in doc.all():
        assert node.tag not in ("script", "img", "iframe", "object", "embed", "form"), node.tag
        assert not [name for name in node.attrs if name.startswith("on")], node.attrs
        href = node.attrs.get("href")
        if node.tag == "a" and href is not None:
            assert is_safe_href(href), href
    text = doc.words
    for visible in case.visible:
        assert " ".join(visible.split()) in text
    for host in case.hosts:
        assert f"({host})" in text


@pytest.mark.parametrize("surface", HTML_SURFACES)
@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_text_is_shown_as_text_and_links_stay_safe(surface: str, case: Hostile) -> None:
    started = time.perf_counter()
    doc = HTML_SURFACES[surface](case.text)
    assert time.perf_counter() - started < 1.0
    shown_ok(doc, case)


def test_a_javascript_link_is_not_a_link_anywhere() -> None:
    for surface in HTML_SURFACES.values():
        doc = surface("[click me](javascript:alert(1)) and <javascript:alert(2)>")
        assert not [a for a in doc.all("a") if "javascript" in (a.attrs.get("href") or "").lower()]
        assert "click me" in doc.words


@pytest.fixture
def plain() -> Iterator[None]:
    override_settings(Settings(message_format="plain", _env_file=None))
    yield
    override_settings(None)


@pytest.mark.usefixtures("plain")
def test_the_plain_format_shows_the_text_as_written() -> None:
    text = "**not bold**  two spaces\n- not a list\n\n<b>raw</b>"
    doc = fragment(text)
    paragraphs = doc.all("p")
    assert [p["class"] for p in paragraphs] == ["hg-literal", "hg-literal"]
    assert [p.text for p in paragraphs] == ["**not bold**  two spaces\n- not a list", "<b>raw</b>"]
    assert not doc.all("strong") and not doc.all("ul") and not doc.all("b")
    assert web_form(text).all("p")[0].text == "**not bold**  two spaces\n- not a list"
