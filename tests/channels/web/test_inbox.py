"""The inbox pages (pure rendering): the list, the open request's form, ended requests, the sign-in
page, and agent text that stays text."""

from __future__ import annotations

from channels.web.inbox import SHORTCUTS, item_of, render_inbox, render_sign_in
from schemas.models import Action, Outcome, Status
from tests.channels.web.test_channel import HOSTILE, NONCE, NOW, Node, make_hf, parse_html

CSRF = "csrf-token-1"


def inbox(**kw: object) -> Node:
    items = kw.pop("items", [item_of(make_hf(message="Deploy v2.1?"))])
    return parse_html(render_inbox(NONCE, operator="ada", csrf=CSRF, items=items, now=NOW, **kw))  # type: ignore[arg-type]


def test_the_list_shows_requester_channel_preview_and_time_left() -> None:
    doc = inbox()
    (item,) = doc.one("ol", id="hg-list").all("li")
    assert item["data-id"] == "hf1"
    link = item.one("a")
    assert link["href"] == "/inbox/hf1" and link.words == "Deploy v2.1? ci-bot · web · 4 min 12 s left"
    assert doc.one("title").words == "(1) Inbox · humangate"
    assert doc.one(id="hg-count").words == "1" and doc.one(id="hg-empty").has("hidden")
    assert doc.one(id="hg-detail").one("h2").words == "No request open"
    assert [n["value"] for n in doc.all("input", name="hg-csrf")] == [CSRF]  # the sign-out form's


def test_an_empty_inbox_says_so() -> None:
    doc = inbox(items=[])
    assert not doc.one(id="hg-empty").has("hidden") and doc.one("title").words == "Inbox · humangate"


def test_the_open_request_has_the_web_forms_fields_and_the_csrf_token() -> None:
    hf = make_hf(message="Deploy v2.1?")
    doc = inbox(current=hf, values={"name": ["Al"]}, errors={"name": "must be at least 3 characters"})
    form = doc.one("form", id="hg-form")
    assert form["action"] == "/inbox/hf1" and form["method"] == "post"
    assert form.one("input", name="hg-csrf")["value"] == CSRF
    assert form.one("input", name="f.name")["value"] == "Al"
    assert form.one("input", name="f.name")["aria-invalid"] == "true"
    assert doc.one(id="hg-errors").one("a").words == "Your name: must be at least 3 characters"
    assert [b["value"] for b in form.all("button") if b.attrs.get("name") == "hg-action"] == [
        "accept",
        "decline",
        "cancel",
    ]
    assert doc.one("ol", id="hg-list").one("a")["aria-current"] == "page"


def test_an_ended_request_shows_how_it_ended_and_no_form() -> None:
    outcome = Outcome(status=Status.DECLINED, action=Action.DECLINE, reason="No", by="Bo", via="web", at=NOW)
    doc = inbox(current=make_hf(status=Status.DECLINED, outcome=outcome), items=[])
    assert doc.one(id="hg-ended").words == "This request has ended: Declined by Bo: No."
    assert not doc.all("form", id="hg-form")


def test_agent_text_is_escaped_in_the_list_and_the_request() -> None:
    hf = make_hf(message=HOSTILE, requester=HOSTILE)
    html = render_inbox(NONCE, operator="ada", csrf=CSRF, items=[item_of(hf)], now=NOW, current=hf)
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    doc = parse_html(html)
    first, second = HOSTILE.split("\n")
    message = doc.one(id="hg-message").one("p")  # shown as text; its line break a <br>
    assert [c if isinstance(c, str) else c.tag for c in message.children] == [first, "br", second]
    assert [n.tag for n in doc.all() if n.tag == "script"] == ["script"]  # only ours


def test_the_shortcuts_are_listed_and_sign_in_never_puts_the_key_in_a_url() -> None:
    doc = inbox()
    keys = [dt.words for dt in doc.one(id="hg-help").all("dt")]
    assert keys == [keys_ for keys_, _ in SHORTCUTS] and "Ctrl+Enter or \u2318+Enter" in keys
    sign_in = parse_html(render_sign_in(NONCE, error="That key is not an operator key."))
    form = sign_in.one("form")
    assert (form["method"], form["action"]) == ("post", "/inbox/sign-in")
    key = form.one("input", name="key")
    assert key["type"] == "password" and key["aria-invalid"] == "true"
    assert sign_in.one(id="hg-errors")["role"] == "alert"
