"""The Adaptive Cards of Teams, rendered from Human Functions alone (no network)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from channels.base import RenderContext
from channels.teams.card import (
    MAX_ACTIVITY_BYTES,
    activity_size,
    oversized_card,
    reason_card,
    render_card,
    summary_of,
)
from channels.teams.inputs import card_regex
from schemas.models import Action, HumanFunction, Outcome, Status
from tests.channels.teams.flows import APPROVAL, outcome_of, texts
from tests.fakes.teams_activities import actions, inputs
from tests.fakes.teams_cards import card_problems

NOW = 1_790_000_000.0
CTX = RenderContext(form_url="https://hg.example/f/abc.secret", now=NOW)


def hf_of(schema: dict[str, Any], message: str = "Please answer", **changes: Any) -> HumanFunction:
    changes.setdefault("id", "0123456789abcdef")
    return HumanFunction(
        requester="deploy-bot",
        channel="teams",
        message=message,
        request_schema=schema,
        created_at=NOW,
        deadline=NOW + 300,
        form_secret="s" * 32,
        **changes,
    )


def one(prop: dict[str, Any], *, required: bool = False) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": prop}, "required": ["x"] if required else []}
    card = render_card(hf_of(schema), CTX)
    assert card_problems(card) == []
    (first, *rest) = list(inputs(card))
    return first if not rest else {"all": [first, *rest]}


def test_text_inputs_carry_styles_lengths_and_regex() -> None:
    plain = one({"type": "string", "title": "Notes"})
    assert plain["type"] == "Input.Text" and plain["isMultiline"] is True and "regex" not in plain
    assert plain["label"] == "Notes" and plain["isRequired"] is False
    code = one({"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[A-Z]+$"}, required=True)
    assert code["maxLength"] == 8 and "isMultiline" not in code and code["isRequired"] is True
    assert code["regex"] == "^(?=[\\s\\S]{3,}$)[\\s\\S]*(?:^[A-Z]+$)[\\s\\S]*$"
    assert code["errorMessage"] == "x: 3 to 8 characters; matching ^[A-Z]+$"
    assert one({"type": "string", "format": "email"})["style"] == "Email"
    assert one({"type": "string", "format": "uri"})["style"] == "Url"
    assert one({"type": "string", "default": "hello"})["value"] == "hello"


@pytest.mark.parametrize(
    ("pattern", "samples"),
    [
        ("\\d{3}", ["12", "123", "a1234b", ""]),
        ("^[a-z]+(-[a-z]+)*$", ["abc", "abc-def", "-abc", "Abc"]),
        ("foo|bar", ["xfoo", "baz", "bar"]),
    ],
)
def test_the_card_regex_accepts_exactly_what_the_server_accepts(pattern: str, samples: list[str]) -> None:
    regex = card_regex({"type": "string", "pattern": pattern, "minLength": 2})
    assert regex is not None
    for sample in samples:
        server = len(sample) >= 2 and re.search(pattern, sample) is not None
        assert (re.search(regex, sample) is not None) is server, (pattern, sample)


@pytest.mark.parametrize(
    "pattern", ["\\p{L}+", "(?i)abc", "a*+", "[[:alpha:]]", "\\u{1F600}", "(?<n>a)\\k<n>", "é"]
)
def test_patterns_javascript_may_read_otherwise_are_left_to_the_server(pattern: str) -> None:
    assert card_regex({"type": "string", "pattern": pattern}) is None


def test_dates_numbers_and_toggles() -> None:
    date = one({"type": "string", "format": "date", "default": "2026-11-22"})
    assert (date["type"], date["value"]) == ("Input.Date", "2026-11-22")
    both = one(
        {"type": "string", "format": "date-time", "default": "2026-11-22T11:30:00+01:00"}, required=True
    )
    day, time = both["all"]
    assert (day["type"], day["label"], day["value"], day["isRequired"]) == (
        "Input.Date",
        "x: date",
        "2026-11-22",
        True,
    )
    assert (time["type"], time["label"], time["value"]) == ("Input.Time", "x: time (UTC)", "10:30")
    number = one({"type": "integer", "minimum": 1, "maximum": 5, "default": 3})
    assert (number["type"], number["min"], number["max"], number["value"]) == ("Input.Number", 1, 5, 3)
    toggle = one({"type": "boolean", "title": "Notify", "default": True})  # required alone: an approval
    assert toggle["type"] == "Input.Toggle" and toggle["value"] == "true" and "isRequired" not in toggle
    assert (toggle["valueOn"], toggle["valueOff"]) == ("true", "false")


def test_choice_sets_are_expanded_compact_or_multi_select_with_titles() -> None:
    few = one(
        {
            "type": "string",
            "enum": ["dev", "prod"],
            "enumNames": ["Development", "Production"],
            "default": "prod",
        }
    )
    assert few["style"] == "expanded" and few["value"] == "1"
    assert few["choices"] == [{"title": "Development", "value": "0"}, {"title": "Production", "value": "1"}]
    many = one({"type": "string", "oneOf": [{"const": f"c{i}", "title": f"City {i}"} for i in range(6)]})
    assert many["style"] == "compact" and "isMultiSelect" not in many
    multi = one(
        {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["a", "c"]}
    )
    assert multi["isMultiSelect"] is True and multi["style"] == "expanded" and multi["value"] == "0,2"
    items = {"anyOf": [{"const": f"t{i}", "title": f"Tag {i}"} for i in range(11)]}
    assert one({"type": "array", "items": items, "minItems": 2})["style"] == "compact"


def test_an_approval_is_three_buttons_each_with_a_submit_fallback() -> None:
    card = render_card(hf_of(APPROVAL), CTX)
    assert card_problems(card) == [] and card["version"] == "1.5"
    assert [i["label"] for i in inputs(card)] == ["reason"]
    buttons = actions(card)
    assert list(buttons) == ["Approve", "Decline…", "Cancel"]
    assert [b["verb"] for b in buttons.values()] == ["approve", "ask_reason", "cancel"]
    assert buttons["Approve"]["style"] == "positive" and buttons["Approve"]["associatedInputs"] == "auto"
    assert buttons["Cancel"]["associatedInputs"] == "none"
    fallbacks = [b["fallback"] for b in buttons.values()]
    assert [f["type"] for f in fallbacks] == ["Action.Submit"] * 3
    assert [f["data"]["act"] for f in fallbacks] == ["approve", "decline", "cancel"]
    assert card["refresh"]["userIds"] == [] and card["refresh"]["action"]["verb"] == "refresh"
    assert reason_card(hf_of(APPROVAL), CTX)["actions"][0]["verb"] == "decline"


def test_agent_markdown_is_rendered_and_nothing_else_fires() -> None:
    """The agent's Markdown renders (bold, a link with its host); its ``<at>`` and ``{{DATE()}}`` are
    broken by an invisible joiner, and the schema's title stays plain text."""
    message = "**Deploy** [now](https://evil.example) <at>everyone</at> {{DATE(2020-01-01T00:00:00Z)}}"
    schema = {
        "type": "object",
        "title": "_title_",
        "properties": {"a": {"type": "string", "title": "[x](y)"}},
    }
    card = render_card(hf_of(schema, message), CTX)
    shown = [block["text"] for block in card["body"] if block["type"] == "TextBlock"]
    assert (
        "**Deploy** [now](https://evil.example) (evil.example) <\u2060at>everyone<\u2060/at> "
        "{\u2060{DATE(2020-01-01T00:00:00Z)}}"
    ) in shown
    runs = [block for block in card["body"] if block["type"] == "RichTextBlock"]
    assert "_title_" in ["".join(r["text"] for r in block["inlines"]) for block in runs]
    assert "_title_" not in json.dumps(shown) and "msteams" in card and "entities" not in card["msteams"]


def ended(schema: dict[str, Any], status: Status, action: Action, **outcome: Any) -> HumanFunction:
    return hf_of(
        schema,
        status=status,
        outcome=Outcome(status=status, action=action, via="teams", at=NOW + 60, **outcome),
    )


def test_an_ended_card_says_who_and_when_and_has_nothing_to_click() -> None:
    hf = ended(APPROVAL, Status.ACCEPTED, Action.ACCEPT, content={"approved": True}, by="Ada (1)")
    card = render_card(hf, CTX)
    assert card_problems(card) == [] and "actions" not in card and "refresh" not in card
    assert outcome_of(card) == "Approved by Ada (1)"
    assert "At {{DATE(2026-09-21T14:14:20Z, SHORT)}} {{TIME(2026-09-21T14:14:20Z)}}" in list(texts(card))
    assert "approved: Yes" in list(texts(card)) and "reason: No answer" in list(texts(card))
    assert not list(inputs(card)) and summary_of(hf).startswith("Approved by Ada (1): ")
    expired = ended(APPROVAL, Status.EXPIRED, Action.CANCEL, reason="Request timed out after 5 minutes")
    assert outcome_of(render_card(expired, CTX)) == "Expired: Request timed out after 5 minutes"


def test_cards_stay_within_teams_message_size() -> None:
    options = [{"const": f"v{i}", "title": "t" * 90 + str(i)} for i in range(100)]
    big = {"type": "object", "properties": {f"p{i}": {"type": "string", "oneOf": options} for i in range(5)}}
    hf = hf_of(big, "é" * 8000)
    card = render_card(hf, CTX)
    assert card == oversized_card(hf, CTX) and card_problems(card) == []
    assert activity_size(card, summary_of(hf)) <= MAX_ACTIVITY_BYTES
    assert actions(card)["Answer in the web form"]["url"] == CTX.form_url

    long = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30)}}
    answered = ended(
        long, Status.ACCEPTED, Action.ACCEPT, content={f"p{i}": "w" * 2000 for i in range(30)}, by="Bo"
    )
    card = render_card(answered, CTX)
    assert activity_size(card, summary_of(answered)) <= MAX_ACTIVITY_BYTES
    assert any(text.endswith("more answers: the agent received them all") for text in texts(card))


def test_a_refused_answer_comes_back_with_what_was_typed_and_the_errors() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "title": "N"}}, "required": ["n"]}
    card = render_card(hf_of(schema), CTX, typed={"n": ["4.5"]}, errors={"n": "must be a whole number"})
    shown = list(texts(card))
    assert shown.index("must be a whole number") > shown.index(
        "Your answer was not recorded. Please fix the fields marked below."
    )
    assert next(inputs(card))["value"] == 4.5
