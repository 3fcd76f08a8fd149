"""Discord modals of every schema kind, and reading MODAL_SUBMIT data back: pure, no network."""

from __future__ import annotations

from typing import Any

import pytest

from channels.discord.interaction import parse_interaction
from channels.discord.modal import (
    MAX_MODAL_FIELDS,
    form_modal,
    form_steps,
    reason_modal,
    step_of,
    submitted_reason,
    submitted_values,
)
from schemas.errors import InvalidAnswerError
from schemas.models import Action
from tests.channels.discord.cases import APPROVAL, HF_ID, PROPERTIES, hf_of, interaction, schema_of


def inputs(modal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Label text -> the input inside it (and the label's description as ``_description``)."""
    return {c["label"]: c["component"] | {"_description": c.get("description")} for c in modal["components"]}


def modal_of(*names: str, values: dict[str, list[str]] | None = None) -> dict[str, dict[str, Any]]:
    schema = schema_of(*names)
    assert len(names) <= MAX_MODAL_FIELDS
    return inputs(form_modal(hf_of(schema), 0, values))


def test_text_fields_are_text_inputs_with_discord_side_limits() -> None:
    shown = modal_of("name", "email", "notes", "code", "day")
    name = shown["Name"]
    assert (name["type"], name["style"], name["required"], name["min_length"], name["max_length"]) == (
        4,
        1,
        True,
        2,
        40,
    )
    assert name["_description"] == "As on your badge (text · 2 to 40 characters)"
    assert shown["email"]["placeholder"] == "name@example.com" and shown["email"]["style"] == 1
    assert shown["notes"]["style"] == 2 and shown["notes"]["max_length"] == 4000  # free text: a paragraph
    assert shown["notes"]["required"] is False
    assert shown["code"]["_description"] == "text · matching ^[A-Z]{3}$"
    assert shown["day"]["value"] == "2026-11-22"  # the default is filled in


def test_every_format_gets_an_example_placeholder() -> None:
    shown = modal_of("email", "site", "day", "at")
    placeholders = [shown[name]["placeholder"] for name in ("email", "site", "day", "at")]
    assert placeholders == [
        "name@example.com",
        "https://example.com/page",
        "2026-11-22",
        "2026-11-22T10:30:00Z",
    ]


def test_numbers_are_text_inputs_that_say_their_range() -> None:
    shown = modal_of("ratio", "age")
    assert shown["ratio"]["type"] == 4 and shown["ratio"]["placeholder"] == "a number from 0 to 1"
    assert shown["age"]["placeholder"] == "a whole number from 18 to 120 · default: 30"
    assert shown["age"]["value"] == "30" and shown["age"]["required"] is True


def test_booleans_are_a_yes_no_radio_group_when_required_and_a_checkbox_when_optional() -> None:
    shown = modal_of("name", "agree", "subscribe")  # with "name" required too, this is no approval
    agree = shown["agree"]
    assert agree["type"] == 21 and agree["required"] is True
    assert [(o["label"], o["value"], o["default"]) for o in agree["options"]] == [
        ("Yes", "true", False),
        ("No", "false", False),
    ]
    assert shown["subscribe"] == {
        "type": 23,
        "custom_id": "f:2",
        "default": True,
        "_description": "yes or no · default: Yes",
    }


def test_single_selects_are_radio_groups_or_selects() -> None:
    shown = modal_of("size", "env", "colour", "only", "many")
    assert shown["size"]["type"] == 21 and shown["size"]["required"] is True
    assert [o["label"] for o in shown["size"]["options"]] == ["s", "m", "l"]
    assert [(o["label"], o["value"], o["default"]) for o in shown["env"]["options"]] == [
        ("Development", "0", False),
        ("Production", "1", True),
    ]
    assert [o["label"] for o in shown["colour"]["options"]] == ["Red", "Green"]
    assert shown["only"]["type"] == 3 and (shown["only"]["min_values"], shown["only"]["max_values"]) == (0, 1)
    assert shown["many"]["type"] == 3 and len(shown["many"]["options"]) == 12


def test_multi_selects_are_checkbox_groups_or_selects_with_min_and_max() -> None:
    shown = modal_of("tags", "pets", "wide")
    tags = shown["tags"]
    assert (tags["type"], tags["min_values"], tags["max_values"], tags["required"]) == (22, 1, 2, True)
    pets = shown["pets"]
    assert (pets["type"], pets["min_values"], pets["max_values"], pets["required"]) == (22, 0, 2, False)
    assert [o["default"] for o in pets["options"]] == [False, True]
    wide = shown["wide"]
    assert (wide["type"], wide["min_values"], wide["max_values"], len(wide["options"])) == (3, 0, 4, 15)


def test_long_forms_come_in_steps_of_five_and_an_approval_form_skips_its_boolean() -> None:
    schema = schema_of()
    steps = form_steps(schema)
    assert [len(step) for step in steps] == [5, 5, 5, 4]
    assert step_of(schema, "wide") == 3 and step_of(schema, "unknown") == 0
    modal = form_modal(hf_of(schema), 2)
    assert modal["custom_id"] == f"hg:{HF_ID}:form:2" and modal["title"] == "Your answer (3/4)"
    assert [c["component"]["custom_id"] for c in modal["components"]] == [f"f:{i}" for i in range(10, 15)]
    approval = form_modal(hf_of(APPROVAL), 0)
    assert [c["label"] for c in approval["components"]] == ["reason"] and approval["title"] == "Your answer"
    titled = form_modal(hf_of({"type": "object", "title": "T" * 60, "properties": PROPERTIES}), 0)
    assert len(titled["title"]) == 45 and titled["title"].endswith("… (1/4)")


def test_earlier_texts_fill_the_modal_again() -> None:
    values = {"name": ["Ada"], "agree": ["false"], "size": ["m"], "tags": ["a", "c"], "subscribe": ["false"]}
    shown = modal_of("name", "agree", "size", "tags", "subscribe", values=values)
    assert shown["Name"]["value"] == "Ada"
    assert [o["default"] for o in shown["agree"]["options"]] == [False, True]
    assert [o["default"] for o in shown["size"]["options"]] == [False, True, False]
    assert [o["default"] for o in shown["tags"]["options"]] == [True, False, True]
    assert shown["subscribe"]["default"] is False


def test_decline_asks_for_an_optional_reason() -> None:
    modal = reason_modal(hf_of(APPROVAL))
    assert modal["custom_id"] == f"hg:{HF_ID}:reason"
    (reason,) = inputs(modal).values()
    assert (reason["type"], reason["style"], reason["required"], reason["max_length"]) == (4, 2, False, 1000)


def submit_data(step: int, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """MODAL_SUBMIT data as Discord sends it: each input inside its label."""
    return {
        "custom_id": f"hg:{HF_ID}:form:{step}",
        "components": [{"type": 18, "id": i, "component": part} for i, part in enumerate(parts)],
    }


def test_a_submit_of_every_kind_is_read_back_typed_and_validated() -> None:
    schema = schema_of("name", "age", "agree", "subscribe", "colour", "tags", "many", "ratio", "at")
    hf = hf_of(schema)
    names = list(schema["properties"])
    step0 = submit_data(
        0,
        [
            {"type": 4, "custom_id": "f:0", "value": "Ada"},
            {"type": 4, "custom_id": "f:1", "value": "36"},
            {"type": 21, "custom_id": "f:2", "value": "true"},
            {"type": 23, "custom_id": "f:3", "value": False},
            {"type": 21, "custom_id": "f:4", "value": "1"},
        ],
    )
    step1 = submit_data(
        1,
        [
            {"type": 22, "custom_id": "f:5", "values": ["2", "0"]},
            {"type": 3, "custom_id": "f:6", "values": ["11"]},
            {"type": 4, "custom_id": "f:7", "value": "0.5"},
            {"type": 4, "custom_id": "f:8", "value": "2026-11-22T10:30"},
        ],
    )
    values = submitted_values(hf, step0) | submitted_values(hf, step1)
    assert values == {
        "name": ["Ada"],
        "age": ["36"],
        "agree": ["true"],
        "subscribe": ["false"],
        "colour": ["g"],
        "tags": ["c", "a"],
        "many": ["v11"],
        "ratio": ["0.5"],
        "at": ["2026-11-22T10:30"],
    }
    assert list(values) == names
    from channels.discord.interaction import form_answer

    answer = form_answer(hf, values, "Ada (111)")
    assert answer.action is Action.ACCEPT and answer.via == "discord" and answer.by == "Ada (111)"
    assert answer.content == {
        "name": "Ada",
        "age": 36,
        "agree": True,
        "subscribe": False,
        "colour": "g",
        "tags": ["a", "c"],
        "many": "v11",
        "ratio": 0.5,
        "at": "2026-11-22T10:30:00Z",
    }


def test_empty_inputs_are_left_out_and_unknown_options_refused() -> None:
    hf = hf_of(schema_of("name", "agree", "colour", "pets", "notes"))
    data = submit_data(
        0,
        [
            {"type": 4, "custom_id": "f:0", "value": ""},
            {"type": 21, "custom_id": "f:1", "value": None},
            {"type": 21, "custom_id": "f:2", "value": None},
            {"type": 22, "custom_id": "f:3", "values": []},
            {"type": 4, "custom_id": "f:9", "value": "an input that is not ours"},
        ],
    )
    assert submitted_values(hf, data) == {"name": [""], "pets": []}
    forged = submit_data(
        0, [{"type": 21, "custom_id": "f:2", "value": "7"}, {"type": 22, "custom_id": "f:3", "values": ["x"]}]
    )
    with pytest.raises(InvalidAnswerError) as refused:
        submitted_values(hf, forged)
    assert refused.value.errors == {"colour": "must be one of: r, g", "pets": "must be one of: cat, dog"}
    legacy = {"components": [{"type": 1, "components": [{"type": 4, "custom_id": "f:4", "value": "hi"}]}]}
    assert submitted_values(hf, legacy) == {"notes": ["hi"]}


def test_parsing_clicks_selects_and_submits_into_answers() -> None:
    approval = hf_of(APPROVAL)
    approve = parse_interaction(
        approval, interaction({"custom_id": f"hg:{HF_ID}:approve"}, name="Ada", user_id="1")
    )
    assert (approve.action, approve.content, approve.by) == (Action.ACCEPT, {"approved": True}, "Ada (1)")
    cancel = parse_interaction(approval, interaction({"custom_id": f"hg:{HF_ID}:cancel"}))
    assert (cancel.action, cancel.reason) == (Action.CANCEL, None)
    reason = {
        "custom_id": f"hg:{HF_ID}:reason",
        "components": [{"type": 18, "component": {"type": 4, "custom_id": "reason", "value": " no "}}],
    }
    decline = parse_interaction(approval, interaction(reason))
    assert (decline.action, decline.reason) == (Action.DECLINE, "no")
    details = parse_interaction(
        approval, interaction(submit_data(0, [{"type": 4, "custom_id": "f:1", "value": "ok"}]))
    )
    assert details.content == {"reason": "ok", "approved": True}
    pick = parse_interaction(hf_of(schema_of("env")), interaction({"custom_id": f"hg:{HF_ID}:pick:1"}))
    assert pick.content == {"env": "prod"}
    chosen = parse_interaction(
        hf_of(schema_of("pets")), interaction({"custom_id": f"hg:{HF_ID}:choose", "values": ["1", "0"]})
    )
    assert chosen.content == {"pets": ["cat", "dog"]}
    for bad in ({"custom_id": f"hg:{HF_ID}:pick:9"}, {"custom_id": f"hg:{HF_ID}:choose", "values": []}):
        with pytest.raises(InvalidAnswerError, match="env: must be one of: dev, prod"):
            parse_interaction(hf_of(schema_of("env")), interaction(bad))
    for opener in ("respond:0", "decline", "web"):
        with pytest.raises(InvalidAnswerError, match="opens a form"):
            parse_interaction(approval, interaction({"custom_id": f"hg:{HF_ID}:{opener}"}))
    with pytest.raises(InvalidAnswerError, match="not one of humangate's"):
        parse_interaction(approval, interaction({"custom_id": "someone-else"}))


def test_a_decline_reason_is_optional_and_bounded() -> None:
    def data(text: str) -> dict[str, Any]:
        return {"components": [{"type": 18, "component": {"type": 4, "custom_id": "reason", "value": text}}]}

    assert submitted_reason(data("   ")) is None
    assert submitted_reason({"components": []}) is None
    with pytest.raises(InvalidAnswerError, match="reason: must be at most 1000 characters"):
        submitted_reason(data("x" * 1001))
