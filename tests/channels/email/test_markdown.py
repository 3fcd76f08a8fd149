"""The message in an email (channels/email/markdown.py): the Markdown as written in the text
alternative, the rendering with mail styles in the HTML one, and the hostile table on both."""

from __future__ import annotations

import time

import pytest

from channels.email.letter import Letter, request_letter
from channels.email.markdown import STYLES, email_message_html
from channels.web.markdown import cleaner, message_html
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, Hostile, is_safe_href
from tests.channels.web.test_channel import NOW, make_hf, parse_html

FORM_URL = "https://hg.example.org/f/hf1.secret"


def letter(text: str) -> Letter:
    return request_letter(make_hf(message=text, channel="email"), FORM_URL, NOW)


def test_the_text_alternative_carries_the_markdown_as_written_and_the_subject_is_plain() -> None:
    sent = letter(RICH)
    assert RICH in sent.text  # docs/rendering.md: the source, which reads as it is
    assert sent.subject == "Input needed: Deploy v2.1 to prod"


def test_the_html_alternative_is_the_rendering_with_a_mail_style_on_each_element() -> None:
    doc = parse_html(email_message_html(RICH))
    assert doc.one("h4").one("strong").words == "v2.1"
    sql, diff = doc.all("pre")
    assert sql["style"] == STYLES["pre"] and sql.one("code")["style"] == STYLES["pre code"]
    colours = {span["class"]: span["style"] for span in diff.all("span")}
    assert colours["hg-added"] == STYLES["span.hg-added"] and "background:#e6ffec" in (
        colours["hg-added"] or ""
    )
    assert colours["hg-removed"] == STYLES["span.hg-removed"]
    cost = doc.one("table").all("th")[1]
    assert cost.words == "cost" and "text-align:right" in (cost["style"] or "")
    inline = [node for node in doc.all("code") if node.words == "payments"]
    assert inline and inline[0]["style"] == STYLES["code"]
    assert doc.one("blockquote")["style"] == STYLES["blockquote"]
    # Every style is one of ours, and the structure and text are exactly the cleaned fragment's.
    assert {node["style"] for node in doc.all() if node.has("style")} <= set(STYLES.values())
    bare = parse_html(message_html(RICH))
    assert [n.tag for n in doc.all()] == [n.tag for n in bare.all()] and doc.text == bare.text


def test_the_cleaner_keeps_only_our_styles_each_on_its_own_tag() -> None:
    mail = cleaner(tuple(sorted(STYLES.items())))
    fragment = (
        '<p style="position:fixed;top:0">a</p><p style="margin:0 0 10px">b</p>'
        f'<span style="{STYLES["p"]}">c</span><strong style="{STYLES["p"]}">d</strong>'
    )
    doc = parse_html(mail.clean(fragment))
    assert [(node.tag, node.attrs.get("style")) for node in doc.all()] == [
        ("p", None),
        ("p", STYLES["p"]),
        ("span", None),
        ("strong", None),
    ]
    escaped = parse_html(email_message_html('`<b style="x">` &amp; <script>x</script>'))
    assert '<b style="x">' in escaped.words and "<script>x</script>" in escaped.words


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_text_in_both_alternatives(case: Hostile) -> None:
    started = time.perf_counter()
    sent = letter(case.text)
    assert time.perf_counter() - started < 1.0
    assert case.text in sent.text  # the text alternative is the source: nothing lost, nothing acts
    doc = parse_html(sent.html.removeprefix("<!DOCTYPE html>"))
    for node in doc.all():
        assert node.tag not in ("script", "img", "iframe", "style", "form"), node.tag
        assert not [name for name in node.attrs if name.startswith("on")]
        href = node.attrs.get("href")
        if href is not None:
            assert is_safe_href(href), href
    for visible in case.visible:
        assert " ".join(visible.split()) in doc.words
    for host in case.hosts:
        assert f"({host})" in doc.words and host in sent.text
