"""The web channel: the form page, the ended pages, cross-site refusal, and form parsing."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest

from channels.base import Channel, RenderContext
from channels.web.channel import WebChannel
from channels.web.page import remaining_text, render_expired_page, render_page, render_unknown_page
from channels.web.post import parse_form, verify_same_origin
from schemas.errors import InvalidAnswerError, SignatureError
from schemas.flat import check_flat_schema
from schemas.models import Action, HumanFunction, Outcome, Status
from schemas.settings import Settings

NONCE = "n0nce-Abc"
CREATED = 1_800_000_000.0
NOW = CREATED + 48
CTX = RenderContext(form_url="http://127.0.0.1:8000/f/hf1.secret", now=NOW)

PROPERTIES: dict[str, dict[str, Any]] = {
    "name": {
        "type": "string",
        "title": "Your name",
        "description": "As on your badge",
        "minLength": 3,
        "maxLength": 20,
    },
    "email": {"type": "string", "format": "email"},
    "site": {"type": "string", "format": "uri"},
    "day": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^[A-Z]+$"},
    "count": {"type": "integer", "minimum": 1, "maximum": 5},
    "ratio": {"type": "number", "minimum": 0.5},
    "ok": {"type": "boolean", "title": "Approve"},
    "level": {"type": "string", "enum": ["low", "high"], "enumNames": ["Low", "High"]},
    "city": {
        "type": "string",
        "oneOf": [{"const": c, "title": f"City {c}"} for c in ("a", "b", "c", "d", "e", "f")],
    },
    "tags": {
        "type": "array",
        "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "minItems": 1,
        "maxItems": 2,
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Deploy check",
    "properties": PROPERTIES,
    "required": ["name", "count", "level", "city", "ok"],
}
check_flat_schema(SCHEMA)


def make_hf(schema: dict[str, Any] | None = None, message: str = "Please check.", **kw: Any) -> HumanFunction:
    data: dict[str, Any] = {
        "id": "hf1",
        "requester": "ci-bot",
        "channel": "web",
        "message": message,
        "request_schema": SCHEMA if schema is None else schema,
        "created_at": CREATED,
        "deadline": CREATED + 300,
        "form_secret": "secret",
    }
    return HumanFunction(**(data | kw))


def one_field(prop: dict[str, Any], required: bool = False) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []}
    check_flat_schema(schema)
    return schema


# A tiny DOM over the stdlib parser, enough to assert on structure rather than substrings.

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def __getitem__(self, name: str) -> str | None:
        return self.attrs[name]

    def has(self, name: str) -> bool:
        return name in self.attrs

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def words(self) -> str:
        return " ".join(self.text.split())

    def all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
                if (tag is None or child.tag == tag) and all(
                    child.attrs.get(k) == v for k, v in wanted.items()
                ):
                    found.append(child)
                found.extend(child.all(tag, **attrs))
        return found

    def one(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.all(tag, **attrs)
        assert len(found) == 1, f"expected one <{tag} {attrs}>, found {len(found)}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        assert len(node.attrs) == len(attrs), f"duplicate attribute in <{tag}>"
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    assert builder.stack == [builder.root], "unclosed elements"
    return builder.root


def page(hf: HumanFunction | None = None, **kw: Any) -> Node:
    return parse_html(render_page(hf or make_hf(), CTX, nonce=NONCE, **kw))


def control(doc: Node, name: str) -> Node:
    """The visible control posting ``f.<name>`` (a checkbox group's first box)."""
    return next(n for n in doc.all(name=f"f.{name}") if n.attrs.get("type") != "hidden")


def value_of(node: Node) -> str | None:
    """What a control shows as typed: a textarea's text, an input's value."""
    return node.text if node.tag == "textarea" else node["value"]


def test_long_or_unbounded_plain_text_is_a_textarea_and_short_text_one_line() -> None:
    props: dict[str, Any] = {
        "free": {"type": "string"},
        "long": {"type": "string", "maxLength": 201},
        "short": {"type": "string", "maxLength": 200},
        "mail": {"type": "string", "format": "email"},
        "code": {"type": "string", "pattern": "^[A-Z]+$"},
    }
    doc = page(
        make_hf(
            {"type": "object", "properties": props},
        )
    )
    tags = {name: control(doc, name).tag for name in props}
    assert tags == {
        "free": "textarea",
        "long": "textarea",
        "short": "input",
        "mail": "input",
        "code": "input",
    }
    assert control(doc, "long")["maxlength"] == "201"
    assert label_of(doc, control(doc, "free")).words == "free"


def label_of(doc: Node, node: Node) -> Node:
    return doc.one("label", for_=str(node["id"]))


def described_text(doc: Node, node: Node) -> str:
    ids = str(node.attrs.get("aria-describedby") or "").split()
    return " ".join(doc.one(id=i).words for i in ids)


# The pending form


def test_form_posts_to_its_own_url() -> None:
    form = page().one("form")
    assert form["method"] == "post"
    assert form.attrs.get("action") in (None, "")


@pytest.mark.parametrize(
    ("name", "tag", "attrs"),
    [
        ("name", "input", {"type": "text", "minlength": "3", "maxlength": "20"}),
        ("email", "input", {"type": "email"}),
        ("site", "input", {"type": "url"}),
        ("day", "input", {"type": "date"}),
        ("at", "input", {"type": "datetime-local"}),
        ("code", "input", {"type": "text", "pattern": "^[A-Z]+$"}),
        ("count", "input", {"type": "number", "step": "1", "min": "1", "max": "5"}),
        ("ratio", "input", {"type": "number", "step": "any", "min": "0.5"}),
        ("ok", "input", {"type": "checkbox", "value": "true"}),
        ("level", "input", {"type": "radio"}),
        ("city", "select", {}),
        ("tags", "input", {"type": "checkbox"}),
    ],
)
def test_every_kind_maps_to_its_input(name: str, tag: str, attrs: dict[str, str]) -> None:
    node = control(page(), name)
    assert node.tag == tag
    assert {k: node.attrs.get(k) for k in attrs} == attrs


def test_every_control_has_a_label_and_a_unique_id() -> None:
    doc = page()
    controls = [
        n for n in doc.all() if n.tag in ("input", "select", "textarea") and n.attrs.get("type") != "hidden"
    ]
    assert len(controls) > len(PROPERTIES)
    ids = [n["id"] for n in controls]
    assert len(set(ids)) == len(ids)
    for node in controls:
        assert label_of(doc, node).words


def test_labels_use_titles_and_descriptions_are_linked() -> None:
    doc = page()
    name = control(doc, "name")
    assert label_of(doc, name).words == "Your name (required)"
    assert "As on your badge" in described_text(doc, name)
    assert label_of(doc, control(doc, "email")).words == "email"


def test_required_fields_are_marked_and_carry_the_attribute() -> None:
    doc = page()
    for name in ("name", "count"):
        node = control(doc, name)
        assert node.has("required")
        assert "(required)" in label_of(doc, node).words
    assert doc.one("select", name="f.city").has("required")
    radios = doc.all("input", name="f.level")
    assert radios and all(r.has("required") for r in radios)
    assert "(required)" in doc.one("fieldset", data_field="level").one("legend").words
    for name in ("email", "ratio"):
        assert not control(doc, name).has("required")
        assert "(required)" not in label_of(doc, control(doc, name)).words
    # Unchecked is a valid answer for a required boolean, so the box is never "required".
    assert not control(doc, "ok").has("required")


def test_limits_are_visible_hints() -> None:
    doc = page()
    assert "3 to 20 characters" in described_text(doc, control(doc, "name"))
    assert "between 1 and 5" in described_text(doc, control(doc, "count"))
    assert "at least 0.5" in described_text(doc, control(doc, "ratio"))
    assert "^[A-Z]+$" in described_text(doc, control(doc, "code"))
    assert "UTC" in described_text(doc, control(doc, "at"))
    tags = doc.one("fieldset", data_field="tags")
    assert "Choose 1 to 2" in described_text(doc, tags)


@pytest.mark.parametrize(
    ("prop", "attrs", "hint"),
    [
        ({"type": "string", "minLength": 2}, {"minlength": "2"}, "At least 2 characters."),
        ({"type": "string", "maxLength": 1}, {"maxlength": "1"}, "At most 1 character."),
        ({"type": "string", "minLength": 4, "maxLength": 4}, {"maxlength": "4"}, "Exactly 4 characters."),
        ({"type": "integer", "maximum": 9}, {"max": "9"}, "A whole number, at most 9."),
        ({"type": "integer", "minimum": 1.0, "maximum": 3.0}, {"min": "1", "max": "3"}, "between 1 and 3"),
        ({"type": "number"}, {"step": "any"}, "A number."),
        ({"type": "string", "pattern": "[0-9]"}, {"pattern": ".*(?:[0-9]).*"}, "[0-9]"),
    ],
)
def test_limit_attributes_and_hints(prop: dict[str, Any], attrs: dict[str, str], hint: str) -> None:
    doc = page(make_hf(one_field(prop)))
    node = control(doc, "x")
    assert {k: node.attrs.get(k) for k in attrs} == attrs
    assert hint in described_text(doc, node)


def test_defaults_prefill_every_kind() -> None:
    props: dict[str, Any] = {
        "s": {"type": "string", "default": "hello"},
        "n": {"type": "number", "default": 2.5},
        "i": {"type": "integer", "default": 3},
        "b": {"type": "boolean", "default": True},
        "c": {"type": "boolean", "default": False},
        "one": {"type": "string", "enum": ["x", "y"], "default": "y"},
        "many": {
            "type": "array",
            "items": {"type": "string", "enum": ["p", "q", "r"]},
            "default": ["p", "r"],
        },
        "when": {"type": "string", "format": "date-time", "default": "2026-11-22T12:30:00+02:00"},
        "sec": {"type": "string", "format": "date-time", "default": "2026-11-22T10:30:15Z"},
    }
    schema = {"type": "object", "properties": props}
    check_flat_schema(schema)
    doc = page(make_hf(schema))
    assert value_of(control(doc, "s")) == "hello"
    assert value_of(control(doc, "n")) == "2.5"
    assert value_of(control(doc, "i")) == "3"
    assert control(doc, "b").has("checked")
    assert not control(doc, "c").has("checked")
    assert [r["value"] for r in doc.all("input", name="f.one") if r.has("checked")] == ["y"]
    assert [r["value"] for r in doc.all("input", name="f.many") if r.has("checked")] == ["p", "r"]
    assert value_of(control(doc, "when")) == "2026-11-22T10:30"  # shown in UTC, read back as UTC
    assert value_of(control(doc, "sec")) == "2026-11-22T10:30:15"
    assert control(doc, "sec")["step"] == "1"


def test_option_titles_are_the_visible_text() -> None:
    doc = page()
    level = doc.one("fieldset", data_field="level")
    shown = [(r["value"], label_of(doc, r).words) for r in level.all("input")]
    assert shown == [("low", "Low"), ("high", "High")]
    options = [(o["value"], o.words) for o in doc.one("select", name="f.city").all("option")]
    assert options == [("", "Choose one…")] + [(c, f"City {c}") for c in "abcdef"]
    tags = doc.one("fieldset", data_field="tags")
    assert [label_of(doc, b).words for b in tags.all("input")] == ["Red", "Green"]


def test_radios_up_to_five_options_then_a_select() -> None:
    five = one_field({"type": "string", "enum": list("abcde")}, required=True)
    six = one_field({"type": "string", "enum": list("abcdef")}, required=True)
    assert {n.tag for n in page(make_hf(five)).all(name="f.x")} == {"input"}
    assert page(make_hf(five)).one("fieldset", data_field="x").one("legend").words == "x (required)"
    assert page(make_hf(six)).one(name="f.x").tag == "select"


def test_an_optional_single_select_can_be_left_unanswered() -> None:
    doc = page(make_hf(one_field({"type": "string", "enum": ["a", "b"]})))
    radios = doc.all("input", name="f.x")
    assert [(r["value"], r.has("checked")) for r in radios] == [("", True), ("a", False), ("b", False)]
    assert label_of(doc, radios[0]).words == "No answer"


def test_a_boolean_posts_false_unless_checked() -> None:
    doc = page(make_hf(one_field({"type": "boolean"})))
    posted = doc.all("input", name="f.x")
    assert [(n["type"], n["value"]) for n in posted] == [("hidden", "false"), ("checkbox", "true")]
    hf = make_hf(one_field({"type": "boolean"}, required=True))
    unchecked = parse_form(hf, {"hg-action": ["accept"], "f.x": ["false"]})
    checked = parse_form(hf, {"hg-action": ["accept"], "f.x": ["false", "true"]})
    assert (unchecked.content, checked.content) == ({"x": False}, {"x": True})


def test_rerender_keeps_what_was_typed_and_shows_errors() -> None:
    values = {
        "name": ["Al"],
        "email": [""],
        "count": ["7"],
        "ok": ["false", "true"],
        "level": ["high"],
        "city": ["c"],
        "tags": ["g"],
        "at": ["2026-11-22T10:30"],
    }
    errors = {"name": "must be at least 3 characters", "count": "must be at most 5", "": "try again"}
    doc = page(values=values, errors=errors, reason="because")
    assert value_of(control(doc, "name")) == "Al"
    assert value_of(control(doc, "count")) == "7"
    assert value_of(control(doc, "at")) == "2026-11-22T10:30"
    assert control(doc, "ok").has("checked")
    assert [r["value"] for r in doc.all("input", name="f.level") if r.has("checked")] == ["high"]
    assert [o["value"] for o in doc.one("select", name="f.city").all("option") if o.has("selected")] == ["c"]
    assert [b["value"] for b in doc.all("input", name="f.tags") if b.has("checked")] == ["g"]
    assert doc.one("textarea", name="hg-reason").text == "because"
    for name, reason in [("name", errors["name"]), ("count", errors["count"])]:
        node = control(doc, name)
        assert node["aria-invalid"] == "true"
        assert reason in described_text(doc, node)
    assert not control(doc, "email").has("aria-invalid")
    summary = doc.one(id="hg-errors")
    assert summary["role"] == "alert"
    items = [li.words for li in summary.all("li")]
    assert items == ["Your name: must be at least 3 characters", "count: must be at most 5", "try again"]
    for link in summary.all("a"):
        assert doc.all(id=str(link["href"]).removeprefix("#"))


def test_a_blank_rerender_does_not_bring_defaults_back() -> None:
    schema = one_field({"type": "string", "default": "hello"})
    assert value_of(control(page(make_hf(schema), values={"x": [""]}, errors={}), "x")) == ""
    boolean = one_field({"type": "boolean", "default": True})
    assert not control(page(make_hf(boolean), values={"x": ["false"]}), "x").has("checked")


def test_a_reason_error_is_shown_at_the_textarea() -> None:
    doc = page(errors={"hg-reason": "must be at most 2000 characters (got 2001)"})
    reason = doc.one("textarea", name="hg-reason")
    assert reason["aria-invalid"] == "true"
    assert "at most 2000" in described_text(doc, reason)
    assert doc.one("details").has("open")
    assert doc.one(id="hg-errors").one("a")["href"] == "#hg-reason"


def test_the_three_actions_and_the_reason() -> None:
    doc = page()
    buttons = doc.one("form").all("button")
    assert [(b["name"], b["value"], b.words) for b in buttons] == [
        ("hg-action", "accept", "Submit"),
        ("hg-action", "decline", "Decline"),
        ("hg-action", "cancel", "Cancel"),
    ]
    assert [b.has("formnovalidate") for b in buttons] == [False, True, True]
    assert all(b["type"] == "submit" and not b.has("disabled") for b in buttons)
    assert doc.one("textarea", name="hg-reason")["maxlength"] == "2000"


HOSTILE = '<script>alert(1)</script>\n<img src=x onerror="alert(2)"> & "quotes"'


def test_untrusted_text_is_inert_everywhere() -> None:
    schema = {
        "type": "object",
        "title": HOSTILE,
        "description": HOSTILE,
        "properties": {
            HOSTILE: {"type": "string", "title": HOSTILE, "description": HOSTILE, "default": HOSTILE},
            "pick": {"type": "string", "oneOf": [{"const": HOSTILE, "title": HOSTILE}]},
            "many": {"type": "array", "items": {"type": "string", "enum": [HOSTILE]}},
        },
    }
    check_flat_schema(schema)
    hf = make_hf(schema, message=HOSTILE, requester=HOSTILE)
    html = render_page(hf, CTX, nonce=NONCE, values=None, errors={HOSTILE: HOSTILE}, notice=HOSTILE)
    doc = parse_html(html)
    assert doc.all("img") == []
    assert len(doc.all("script")) == 1  # ours
    first, second = HOSTILE.split("\n")
    message = doc.one(id="hg-message").one("p")  # shown as text; its line break a <br>
    assert [c if isinstance(c, str) else c.tag for c in message.children] == [first, "br", second]
    assert value_of(control(doc, HOSTILE)) == HOSTILE
    assert doc.one("input", name="f.pick", value=HOSTILE)
    assert "<script>alert" not in html and "<img" not in html


def test_ended_pages_are_inert_too() -> None:
    schema = one_field({"type": "string", "oneOf": [{"const": "v", "title": HOSTILE}]})
    outcome = Outcome(
        status=Status.ACCEPTED, action=Action.ACCEPT, content={"x": "v"}, by=HOSTILE, via="web", at=NOW
    )
    doc = page(make_hf(schema, message=HOSTILE, status=Status.ACCEPTED, outcome=outcome), notice=HOSTILE)
    assert doc.all("img") == [] and doc.all("script") == []
    assert doc.one("dd").text == HOSTILE


def test_every_script_and_style_carries_the_nonce_and_nothing_is_external() -> None:
    ended = make_hf(
        status=Status.EXPIRED, outcome=Outcome(status=Status.EXPIRED, action=Action.CANCEL, via="web", at=NOW)
    )
    for html in (
        render_page(make_hf(), CTX, nonce=NONCE),
        render_page(ended, CTX, nonce=NONCE),
        render_unknown_page(NONCE),
    ):
        doc = parse_html(html)
        assert doc.one("html")["lang"] == "en"
        assert doc.one("title").words
        tagged = doc.all("script") + doc.all("style")
        assert tagged and all(n["nonce"] == NONCE for n in tagged)
        assert all(not n.has("src") for n in doc.all("script"))
        # The only link is the empty inline icon that stops the browser fetching /favicon.ico.
        assert [link.attrs for link in doc.all("link")] == [{"rel": "icon", "href": "data:,"}]
        assert doc.all("img") == [] and doc.all("iframe") == []
        for node in doc.all():
            assert not [a for a in node.attrs if a.startswith("on")], f"event handler on <{node.tag}>"
            assert "style" not in node.attrs  # inline style attributes would need 'unsafe-inline'
            assert "javascript:" not in str(node.attrs.get("href") or "")


def test_countdown_is_server_rendered_and_scripted() -> None:
    doc = page()
    timer = doc.one(id="hg-countdown")
    assert timer.words == "4 min 12 s left"
    assert float(str(timer["data-deadline"])) == CREATED + 300
    assert float(str(timer["data-now"])) == NOW
    script = doc.one("script").text
    assert "setInterval" in script and "data-deadline" in script and "disabled = true" in script


def test_a_pending_request_past_its_deadline_cannot_be_submitted() -> None:
    late = RenderContext(form_url=CTX.form_url, now=CREATED + 301)
    doc = parse_html(render_page(make_hf(), late, nonce=NONCE))
    assert "expired" in doc.one(id="hg-countdown").words
    assert all(b.has("disabled") for b in doc.all("button"))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (0.2, "1 s"), (59, "59 s"), (60, "1 min 0 s"), (252, "4 min 12 s"), (3900, "1 h 5 min")],
)
def test_remaining_text(seconds: float, text: str) -> None:
    assert remaining_text(seconds) == text


def test_the_requester_is_shown() -> None:
    assert page().one("strong", **{"class": "requester"}).words == "ci-bot"


# Ended pages


def ended(status: Status, action: Action, **kw: Any) -> Node:
    outcome = Outcome(status=status, action=action, via="web", at=CREATED + 120, **kw)
    return page(make_hf(status=status, outcome=outcome), notice=kw.pop("notice", None))


def assert_read_only(doc: Node) -> None:
    assert doc.all("form") == [] and doc.all("button") == [] and doc.all("input") == []


def test_accepted_page_shows_values_with_titles() -> None:
    content = {
        "name": "Ada\nLovelace",
        "count": 3,
        "ok": True,
        "level": "high",
        "city": "b",
        "tags": ["r", "g"],
    }
    doc = ended(Status.ACCEPTED, Action.ACCEPT, content=content, by="web form")
    assert_read_only(doc)
    assert doc.one("h1").words == "Answered"
    assert doc.one("p", data_status="accepted").words == "Answered by web form at 2027-01-15 08:02:00 UTC."
    rows = dict(zip([dt.words for dt in doc.all("dt")], [dd.text for dd in doc.all("dd")], strict=True))
    assert rows["Your name"] == "Ada\nLovelace"
    assert rows["count"] == "3"
    assert rows["Approve"] == "Yes"
    assert rows["level"] == "High"
    assert rows["city"] == "City b"
    assert rows["tags"] == "Red, Green"
    assert rows["email"] == "No answer"


@pytest.mark.parametrize(
    ("reason", "shown"), [("Not now", "Reason: Not now"), (None, "Reason: No reason given")]
)
def test_declined_page_shows_the_reason(reason: str | None, shown: str) -> None:
    doc = ended(Status.DECLINED, Action.DECLINE, reason=reason, by="Ada (U1)")
    assert_read_only(doc)
    assert doc.one("h1").words == "Declined"
    assert "Declined by Ada (U1)" in doc.one("p", data_status="declined").words
    assert doc.one("p", **{"class": "reason"}).words == shown


def test_canceled_page_shows_who_and_why() -> None:
    doc = ended(Status.CANCELED, Action.CANCEL, reason="Request canceled by the agent", by="agent")
    assert_read_only(doc)
    assert doc.one("p", data_status="canceled").words == "Canceled by agent at 2027-01-15 08:02:00 UTC."
    assert doc.one("p", **{"class": "reason"}).words == "Reason: Request canceled by the agent"


def test_expired_page_says_the_agent_stopped_waiting() -> None:
    doc = ended(Status.EXPIRED, Action.CANCEL, reason="Request timed out after 5 minutes")
    assert_read_only(doc)
    text = doc.one("p", data_status="expired")
    assert text.words == "This request expired at 2027-01-15 08:05:00 UTC; the agent stopped waiting."
    assert text.one("time")["datetime"] == "2027-01-15T08:05:00Z"
    assert doc.one("p", **{"class": "reason"}).words == "Expired: Request timed out after 5 minutes"


def test_the_page_of_a_request_its_policy_declined_on_timeout_says_why() -> None:
    """docs/policies.md: every post, the inbox and the form page show ``Expired: No answer within
    ... (policy ...)``; the reaper's outcome, or before it came (the deadline passed), the same."""
    reason = "No answer within 5 minutes (policy deploys)"
    outcome = Outcome(
        status=Status.EXPIRED, action=Action.DECLINE, reason=reason, via="timeout", at=CREATED + 300
    )
    ended_hf = make_hf(status=Status.EXPIRED, outcome=outcome, policy="deploys", on_timeout="decline")
    overdue = make_hf(policy="deploys", on_timeout="decline")  # pending, its deadline passed
    for hf in (ended_hf, overdue):
        doc = parse_html(render_expired_page(hf, NONCE))
        assert doc.one("h1").words == "Expired"
        assert doc.one("p", **{"class": "reason"}).words == f"Expired: {reason}"


def test_a_notice_is_shown_at_the_top() -> None:
    outcome = Outcome(status=Status.DECLINED, action=Action.DECLINE, by="Bo", via="slack", at=NOW)
    doc = page(make_hf(status=Status.DECLINED, outcome=outcome), notice="Already answered by Bo")
    main = doc.one("main")
    first = next(c for c in main.children if isinstance(c, Node))
    assert (first["role"], first.words) == ("status", "Already answered by Bo")


def test_unknown_page() -> None:
    doc = parse_html(render_unknown_page(NONCE))
    assert doc.one("h1").words == "This link is not valid or has expired."
    assert doc.all("form") == []


# Cross-site refusal


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},
        {"origin": "http://127.0.0.1:8000", "host": "127.0.0.1:8000"},
        {"origin": "https://gate.example.com", "host": "gate.example.com"},
        {"origin": "https://gate.example.com:443", "host": "Gate.Example.com"},
        {"origin": "http://[::1]:8000", "host": "[::1]:8000", "sec-fetch-site": "same-origin"},
        # What Chromium sends for our own form under Referrer-Policy: no-referrer.
        {"origin": "null", "host": "127.0.0.1:8000", "sec-fetch-site": "same-origin"},
    ],
)
def test_same_origin_posts_pass(headers: dict[str, str]) -> None:
    WebChannel().verify(headers, b"", NOW, Settings())


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"sec-fetch-site": "cross-site"}, "Sec-Fetch-Site: cross-site"),
        ({"sec-fetch-site": "same-site"}, "Sec-Fetch-Site: same-site"),
        ({"origin": "null", "host": "gate.example.com"}, "Origin: null"),
        ({"origin": "https://evil.example", "host": "gate.example.com"}, "not this site"),
        ({"origin": "http://127.0.0.1:9000", "host": "127.0.0.1:8000"}, "not this site"),
        ({"origin": "https://gate.example.com", "host": "gate.example.com:8443"}, "not this site"),
        ({"origin": "https://gate.example.com"}, "no Host header"),
        ({"origin": "gate.example.com", "host": "gate.example.com"}, "not a valid origin"),
        ({"origin": "http://h:99999", "host": "h"}, "not a valid origin"),
        ({"sec-fetch-site": "same-origin", "origin": "https://evil.example", "host": "a.b"}, "not this site"),
    ],
)
def test_cross_site_posts_are_refused(headers: dict[str, str], words: str) -> None:
    with pytest.raises(SignatureError, match="refused") as info:
        verify_same_origin(headers)
    assert words in str(info.value)


# Parsing a post


def test_parse_accept_coerces_fields() -> None:
    payload = {
        "hg-action": ["accept"],
        "hg-reason": ["ignored"],
        "f.name": ["Ada"],
        "f.count": ["3"],
        "f.ok": ["false", "true"],
        "f.level": ["low"],
        "f.city": ["a"],
        "f.tags": ["g", "r"],
        "f.email": [""],
        "f.at": ["2026-11-22T10:30"],
    }
    answer = WebChannel().parse(make_hf(), payload)
    assert answer.action is Action.ACCEPT
    assert answer.content == {
        "name": "Ada",
        "at": "2026-11-22T10:30:00Z",
        "count": 3,
        "ok": True,
        "level": "low",
        "city": "a",
        "tags": ["r", "g"],
    }
    assert (answer.reason, answer.by, answer.via) == (None, "web form", "web")


@pytest.mark.parametrize("action", [Action.DECLINE, Action.CANCEL])
def test_parse_decline_and_cancel_keep_a_stripped_reason(action: Action) -> None:
    answer = parse_form(make_hf(), {"hg-action": [action.value], "hg-reason": ["  busy \n"], "f.name": ["x"]})
    assert (answer.action, answer.content, answer.reason, answer.via) == (action, None, "busy", "web")
    blank = parse_form(make_hf(), {"hg-action": [action.value], "hg-reason": ["   "]})
    assert blank.reason is None
    assert parse_form(make_hf(), {"hg-action": action.value}).reason is None


def test_parse_refuses_a_reason_over_the_limit() -> None:
    assert parse_form(make_hf(), {"hg-action": ["decline"], "hg-reason": ["r" * 2000]}).reason == "r" * 2000
    with pytest.raises(InvalidAnswerError) as info:
        parse_form(make_hf(), {"hg-action": ["decline"], "hg-reason": ["r" * 2001]})
    assert info.value.errors == {"hg-reason": "must be at most 2000 characters (got 2001)"}


@pytest.mark.parametrize("actions", [[], ["submit"], ["accept", "decline"], [""]])
def test_parse_needs_exactly_one_known_action(actions: list[str]) -> None:
    payload = {"hg-action": actions} if actions else {}
    with pytest.raises(InvalidAnswerError) as info:
        parse_form(make_hf(), payload)
    assert list(info.value.errors) == [""]
    assert "accept, decline, cancel" in info.value.errors[""]


def test_parse_refuses_unknown_fields_and_bad_values() -> None:
    payload = {
        "hg-action": ["accept"],
        "f.name": ["Ada"],
        "f.count": ["three"],
        "f.nope": ["1"],
        "csrf": ["x"],
    }
    with pytest.raises(InvalidAnswerError) as info:
        parse_form(make_hf(), payload)
    assert info.value.errors == {"": "unknown fields: nope", "count": "must be a whole number"}


def test_parse_does_not_validate_the_schema() -> None:
    # Length and required rules are the lifecycle's shared validator's job, not the channel's.
    answer = parse_form(make_hf(), {"hg-action": ["accept"], "f.name": ["A"]})
    assert answer.content == {"name": "A"}


# The channel's plumbing


async def test_web_channel_posts_nothing() -> None:
    channel: Channel = WebChannel()
    settings = Settings()
    assert channel.name == "web"
    assert channel.missing_settings(settings) == []
    async with channel.connect(settings) as client:
        assert client is None
        assert await channel.deliver(make_hf(), CTX, client) == {}
        await channel.update(make_hf(), CTX, client)
    assert await channel.check(settings) == []


def test_render_uses_a_fresh_nonce_each_time() -> None:
    nonces = {parse_html(WebChannel().render(make_hf(), CTX)).one("script")["nonce"] for _ in range(3)}
    assert len(nonces) == 3
    assert all(n and len(n) >= 16 for n in nonces)
