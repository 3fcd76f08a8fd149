"""Slack modals and interactions (pure): one input per schema type, reading every input back,
errors keyed by block, and clicks and submissions parsed into answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from channels.slack.actions import parse_interaction
from channels.slack.inputs import hint_text
from channels.slack.modal import (
    block_errors,
    form_content,
    form_view,
    modal_problem,
    notice_view,
    reason_view,
    view_metadata,
)
from schemas.answers import validate_answer
from schemas.errors import InvalidAnswerError
from schemas.models import Action
from tests.channels.slack.test_channel import make_hf, one

EVERY_TYPE: dict[str, dict[str, Any]] = {
    "name": {
        "type": "string",
        "title": "Your name",
        "description": "As on your badge",
        "minLength": 3,
        "maxLength": 20,
    },
    "bio": {"type": "string", "default": "Hello"},
    "email": {"type": "string", "format": "email", "default": "a@b.co"},
    "site": {"type": "string", "format": "uri"},
    "day": {"type": "string", "format": "date", "default": "2026-11-22"},
    "at": {"type": "string", "format": "date-time", "default": "2026-11-22T10:30:00Z"},
    "code": {"type": "string", "pattern": "^[A-Z]+$"},
    "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5, "default": 1.5},
    "count": {"type": "integer", "minimum": 1, "maximum": 5},
    "ok": {"type": "boolean", "default": True},
    "level": {"type": "string", "enum": ["low", "high"], "enumNames": ["Low", "High"], "default": "high"},
    "city": {
        "type": "string",
        "oneOf": [{"const": c, "title": f"City {c}"} for c in "abcdef"],
        "default": "b",
    },
    "tags": {
        "type": "array",
        "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "minItems": 1,
        "maxItems": 2,
        "default": ["g"],
    },
    "many": {
        "type": "array",
        "items": {"type": "string", "enum": [f"o{i}" for i in range(12)]},
        "maxItems": 3,
    },
}
RICH_DEPLOY = {
    "type": "rich_text",
    "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "Deploy v2.1?"}]}],
}
"""The message "Deploy v2.1?" as its ``rich_text`` block."""
SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "A rather long modal title here",
    "description": "Please fill in",
    "properties": EVERY_TYPE,
    "required": ["name", "count", "ok", "level"],
}
BLOCK = {name: f"f{i}" for i, name in enumerate(EVERY_TYPE)}


def inputs() -> dict[str, dict[str, Any]]:
    view = form_view(make_hf(SCHEMA))
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def submitted(values: Mapping[str, Any], callback: str = "hg:form", **meta: str) -> dict[str, Any]:
    metadata = '{"hf": "hf1"' + "".join(f', "{k}": "{v}"' for k, v in meta.items()) + "}"
    return {
        "type": "view_submission",
        "user": {"id": "U1", "name": "ada"},
        "view": {
            "callback_id": callback,
            "private_metadata": metadata,
            "state": {"values": {block: {"value": state} for block, state in values.items()}},
        },
    }


def test_the_form_modal_has_one_input_per_field_in_schema_order() -> None:
    view = form_view(make_hf(SCHEMA))
    assert view["type"] == "modal" and view["callback_id"] == "hg:form"
    assert view["title"] == {"type": "plain_text", "text": "A rather long modal tit\u2026"}
    assert view["submit"]["text"] == "Submit" and view["close"]["text"] == "Back"
    assert view_metadata(view) == {"hf": "hf1"}
    assert view["blocks"][0] == RICH_DEPLOY
    assert view["blocks"][1] == {
        "type": "context",
        "elements": [{"type": "plain_text", "text": "Please fill in"}],
    }
    found = inputs()
    assert list(found) == list(BLOCK.values())
    assert {b: found[b]["optional"] for b in (BLOCK["name"], BLOCK["bio"])} == {"f0": False, "f1": True}
    assert {b["element"]["action_id"] for b in found.values()} == {"value"}


@pytest.mark.parametrize(
    ("name", "element"),
    [
        ("name", {"type": "plain_text_input", "max_length": 20, "min_length": 3}),
        (
            "bio",
            {"type": "plain_text_input", "max_length": 3000, "multiline": True, "initial_value": "Hello"},
        ),
        ("email", {"type": "email_text_input", "initial_value": "a@b.co"}),
        ("site", {"type": "url_text_input"}),
        ("day", {"type": "datepicker", "initial_date": "2026-11-22"}),
        ("at", {"type": "datetimepicker", "initial_date_time": 1795343400}),
        ("code", {"type": "plain_text_input", "max_length": 3000}),
        (
            "ratio",
            {
                "type": "number_input",
                "is_decimal_allowed": True,
                "min_value": "0.5",
                "max_value": "2.5",
                "initial_value": "1.5",
            },
        ),
        ("count", {"type": "number_input", "is_decimal_allowed": False, "min_value": "1", "max_value": "5"}),
        (
            "ok",
            {
                "type": "radio_buttons",
                "options": [
                    {"text": {"type": "plain_text", "text": "Yes"}, "value": "true"},
                    {"text": {"type": "plain_text", "text": "No"}, "value": "false"},
                ],
                "initial_option": {"text": {"type": "plain_text", "text": "Yes"}, "value": "true"},
            },
        ),
        (
            "level",
            {
                "type": "radio_buttons",
                "options": [
                    {"text": {"type": "plain_text", "text": "Low"}, "value": "0"},
                    {"text": {"type": "plain_text", "text": "High"}, "value": "1"},
                ],
                "initial_option": {"text": {"type": "plain_text", "text": "High"}, "value": "1"},
            },
        ),
        (
            "tags",
            {
                "type": "checkboxes",
                "options": [
                    {"text": {"type": "plain_text", "text": "Red"}, "value": "0"},
                    {"text": {"type": "plain_text", "text": "Green"}, "value": "1"},
                ],
                "initial_options": [{"text": {"type": "plain_text", "text": "Green"}, "value": "1"}],
            },
        ),
    ],
)
def test_each_kind_of_field_gets_its_slack_input(name: str, element: dict[str, Any]) -> None:
    assert inputs()[BLOCK[name]]["element"] == {"action_id": "value", **element}


def test_many_options_become_menus_with_titles_as_option_text() -> None:
    city = inputs()[BLOCK["city"]]["element"]
    assert city["type"] == "static_select" and [o["text"]["text"] for o in city["options"]][:2] == [
        "City a",
        "City b",
    ]
    assert city["initial_option"] == {"text": {"type": "plain_text", "text": "City b"}, "value": "1"}
    many = inputs()[BLOCK["many"]]["element"]
    assert (
        many["type"] == "multi_static_select"
        and many["max_selected_items"] == 3
        and len(many["options"]) == 12
    )


def test_labels_are_titles_and_hints_carry_descriptions_and_rules() -> None:
    found = inputs()
    assert found["f0"]["label"] == {"type": "plain_text", "text": "Your name"}
    assert found["f0"]["hint"] == {"type": "plain_text", "text": "As on your badge. 3 to 20 characters"}
    assert found[BLOCK["site"]]["label"]["text"] == "site" and "hint" not in found[BLOCK["site"]]
    assert hint_text(EVERY_TYPE["code"]) == "Must match the pattern ^[A-Z]+$"
    assert hint_text(EVERY_TYPE["ratio"]) == "Between 0.5 and 2.5"
    assert hint_text(EVERY_TYPE["count"]) == "A whole number between 1 and 5"
    assert hint_text(EVERY_TYPE["tags"]) == "Choose 1 to 2"
    assert hint_text({"type": "string", "maxLength": 9}) == "At most 9 characters"
    assert hint_text({"type": "integer", "minimum": 0}) == "A whole number at least 0"
    assert (
        hint_text({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 1})
        == "Choose at least 1"
    )


def test_every_input_type_reads_back_into_typed_content() -> None:
    values = {
        BLOCK["name"]: {"type": "plain_text_input", "value": "Ada"},
        BLOCK["bio"]: {"type": "plain_text_input", "value": None},
        BLOCK["email"]: {"type": "email_text_input", "value": "ada@example.com"},
        BLOCK["site"]: {"type": "url_text_input", "value": "https://example.com/x"},
        BLOCK["day"]: {"type": "datepicker", "selected_date": "2026-11-22"},
        BLOCK["at"]: {"type": "datetimepicker", "selected_date_time": 1795343400},
        BLOCK["code"]: {"type": "plain_text_input", "value": "ABC"},
        BLOCK["ratio"]: {"type": "number_input", "value": "2.25"},
        BLOCK["count"]: {"type": "number_input", "value": "4"},
        BLOCK["ok"]: {"type": "radio_buttons", "selected_option": {"value": "false"}},
        BLOCK["level"]: {"type": "radio_buttons", "selected_option": {"value": "0"}},
        BLOCK["city"]: {"type": "static_select", "selected_option": {"value": "5"}},
        BLOCK["tags"]: {"type": "checkboxes", "selected_options": [{"value": "1"}, {"value": "0"}]},
        BLOCK["many"]: {"type": "multi_static_select", "selected_options": []},
    }
    hf = make_hf(SCHEMA)
    content = form_content(hf, submitted(values)["view"]["state"]["values"])
    assert content == {
        "name": "Ada",
        "email": "ada@example.com",
        "site": "https://example.com/x",
        "day": "2026-11-22",
        "at": "2026-11-22T10:30:00Z",
        "code": "ABC",
        "ratio": 2.25,
        "count": 4,
        "ok": False,
        "level": "low",
        "city": "f",
        "tags": ["r", "g"],
    }
    assert validate_answer(SCHEMA, content) == content


def test_empty_optional_inputs_are_left_out_and_empty_required_ones_are_required() -> None:
    values = {
        BLOCK["name"]: {"type": "plain_text_input", "value": None},
        BLOCK["day"]: {"type": "datepicker", "selected_date": None},
        BLOCK["at"]: {"type": "datetimepicker", "selected_date_time": None},
        BLOCK["count"]: {"type": "number_input", "value": None},
        BLOCK["ok"]: {"type": "radio_buttons", "selected_option": None},
        BLOCK["level"]: {"type": "radio_buttons", "selected_option": None},
        BLOCK["tags"]: {"type": "checkboxes", "selected_options": []},
    }
    answer = parse_interaction(make_hf(SCHEMA), submitted(values))
    assert answer.content == {}
    with pytest.raises(InvalidAnswerError) as raised:
        validate_answer(SCHEMA, answer.content)
    assert raised.value.errors == {
        "name": "is required",
        "count": "is required",
        "ok": "is required",
        "level": "is required",
    }


def test_an_option_that_is_not_offered_is_refused_with_the_choices() -> None:
    values = {
        BLOCK["level"]: {"type": "radio_buttons", "selected_option": {"value": "7"}},
        BLOCK["ok"]: {"type": "radio_buttons", "selected_option": {"value": "maybe"}},
        BLOCK["site"]: {"type": "rich_text_input"},
    }
    with pytest.raises(InvalidAnswerError) as raised:
        parse_interaction(make_hf(SCHEMA), submitted(values))
    assert raised.value.errors == {
        "site": "cannot read a Slack input of type 'rich_text_input'",
        "ok": "must be true or false",
        "level": "must be one of: low, high",
    }


def test_errors_are_keyed_by_the_block_slack_shows_them_under() -> None:
    hf = make_hf(SCHEMA)
    view = form_view(hf)
    errors = {"name": "must be at least 3 characters", "count": "must be at most 5", "": "unknown fields: zz"}
    assert block_errors(hf, errors, view) == {
        "f0": "Must be at least 3 characters; Unknown fields: zz",
        BLOCK["count"]: "Must be at most 5",
    }
    reason = reason_view(hf, Action.DECLINE)
    assert block_errors(hf, {"reason": "must be at most 2000 characters"}, reason) == {
        "reason": "Must be at most 2000 characters"
    }


def test_a_schema_that_does_not_fit_a_modal_says_why() -> None:
    assert modal_problem(SCHEMA) is None
    assert modal_problem(one({"type": "string", "minLength": 4000})) == (
        "x: needs at least 4000 characters; a Slack text input holds 3000"
    )
    wide = one({"type": "string", "enum": [f"o{i}" for i in range(101)]})
    assert modal_problem(wide) == "x: has 101 options; a Slack menu holds 100"
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(99)}}
    assert modal_problem(many) == "a Slack modal holds at most 98 fields"


def test_a_notice_replaces_a_modal_with_plain_words() -> None:
    view = notice_view("Already answered by someone with a long name", "Already answered by <@U1>.")
    assert view["title"]["text"] == "Already answered by som\u2026" and "submit" not in view
    assert view["blocks"] == [
        {"type": "section", "text": {"type": "plain_text", "text": "Already answered by <@U1>."}}
    ]
