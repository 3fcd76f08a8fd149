"""The Discord message of a Human Function, pending and ended: pure rendering, no network."""

from __future__ import annotations

from typing import Any

import pytest

from channels.discord.components import Act, CustomId, layout_of, parse_custom_id
from channels.discord.embed import EMBED_TOTAL, render_message
from channels.discord.text import escape, field_hint
from channels.document.fit import READ_MORE
from schemas.models import Status
from tests.channels.discord.cases import APPROVAL, CTX, HF_ID, PROPERTIES, ended, hf_of, schema_of


def components(payload: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [row["components"] for row in payload["components"]]


def labels(payload: dict[str, Any]) -> list[list[str]]:
    return [[item.get("label") or item.get("placeholder", "") for item in row] for row in components(payload)]


def fields(payload: dict[str, Any]) -> dict[str, str]:
    return {field["name"]: field["value"] for field in payload["embeds"][0]["fields"]}


def embed_size(embed: dict[str, Any]) -> int:
    parts = [embed.get("title", ""), embed.get("description", ""), embed.get("footer", {}).get("text", "")]
    parts += [f["name"] + f["value"] for f in embed.get("fields", [])]
    return sum(len(part) for part in parts)


def test_custom_ids_round_trip_and_refuse_anything_else() -> None:
    for custom_id in (
        CustomId(HF_ID, Act.APPROVE),
        CustomId(HF_ID, Act.FORM, 3),
        CustomId(HF_ID, Act.PICK, 24),
    ):
        assert parse_custom_id(str(custom_id)) == custom_id
        assert len(str(custom_id)) <= 100
    for bad in (
        "",
        "hg:XYZ:approve",
        f"hg:{HF_ID}:explode",
        f"other:{HF_ID}:approve",
        f"hg:{HF_ID}:form:1:2",
    ):
        with pytest.raises(ValueError):
            parse_custom_id(bad)


def test_an_approval_has_approve_decline_and_cancel_buttons() -> None:
    payload = render_message(hf_of(APPROVAL), CTX)
    assert labels(payload) == [["Approve", "Approve with details…", "Decline…", "Cancel"]]
    styles = [item["style"] for item in components(payload)[0]]
    assert styles == [3, 1, 4, 2]  # success, primary, danger, secondary
    ids = [item["custom_id"] for item in components(payload)[0]]
    assert ids == [
        f"hg:{HF_ID}:approve",
        f"hg:{HF_ID}:respond:0",
        f"hg:{HF_ID}:decline",
        f"hg:{HF_ID}:cancel",
    ]
    plain = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    assert labels(render_message(hf_of(plain), CTX)) == [["Approve", "Decline…", "Cancel"]]
    assert render_message(hf_of(APPROVAL), CTX)["embeds"][0]["title"] == "Approval requested"


def test_the_embed_shows_the_message_who_asks_and_the_deadline_as_discord_timestamps() -> None:
    payload = render_message(hf_of(APPROVAL, "Deploy v2.1?"), CTX)
    embed = payload["embeds"][0]
    assert embed["description"] == "Deploy v2.1?"
    assert fields(payload)["Requested by"] == "ci-bot"
    deadline = int(hf_of(APPROVAL).deadline)
    assert fields(payload)["Answer by"] == f"<t:{deadline}:f> (<t:{deadline}:R>)"
    assert embed["footer"]["text"] == f"Human Function {HF_ID}"
    assert payload["allowed_mentions"] == {"parse": []}
    assert "tts" not in payload and "nonce" not in payload
    posted = render_message(hf_of(APPROVAL), CTX, nonce=HF_ID)
    assert (posted["nonce"], posted["enforce_nonce"]) == (HF_ID, True)


def test_a_single_select_of_up_to_five_options_is_one_button_each() -> None:
    payload = render_message(hf_of(schema_of("env")), CTX)
    assert labels(payload) == [["Development", "Production"], ["Decline…", "Cancel"]]
    assert [item["style"] for item in components(payload)[0]] == [2, 1]  # the default stands out
    assert [item["custom_id"] for item in components(payload)[0]] == [
        f"hg:{HF_ID}:pick:0",
        f"hg:{HF_ID}:pick:1",
    ]
    assert labels(render_message(hf_of(schema_of("colour")), CTX))[0] == ["Red", "Green"]
    assert layout_of(schema_of("size")) == "buttons"


def test_a_longer_single_select_and_a_multi_select_are_select_menus() -> None:
    (select,) = components(render_message(hf_of(schema_of("many")), CTX))[0]
    assert (select["type"], select["min_values"], select["max_values"]) == (3, 1, 1)
    assert [o["value"] for o in select["options"]] == [str(i) for i in range(12)]
    assert select["placeholder"].startswith("many: one of: v0, v1")
    (tags,) = components(render_message(hf_of(schema_of("tags")), CTX))[0]
    assert (tags["min_values"], tags["max_values"]) == (1, 2)
    assert [o["label"] for o in tags["options"]] == ["a", "b", "c"]
    (pets,) = components(render_message(hf_of(schema_of("pets")), CTX))[0]
    assert [(o["label"], o["default"]) for o in pets["options"]] == [("Cat", False), ("Dog", True)]
    assert (pets["min_values"], pets["max_values"]) == (1, 2)


def test_anything_else_is_a_respond_button_with_each_field_described() -> None:
    payload = render_message(hf_of(schema_of()), CTX)
    assert labels(payload) == [["Respond…", "Decline…", "Cancel"]]
    described = fields(payload)
    assert described["Name"] == "required · text · 2 to 40 characters\nAs on your badge"
    assert described["email"] == "required · an email address"
    assert described["site"] == "optional · a web address (URI)"
    assert described["day"] == "optional · a date like 2026-11-22 · default: 2026-11-22"
    assert described["at"] == "optional · a date and time like 2026-11-22T10:30:00Z"
    assert described["code"] == escape("optional · text · matching ^[A-Z]{3}$")
    assert described["ratio"] == "optional · a number from 0 to 1"
    assert described["age"] == "required · a whole number from 18 to 120 · default: 30"
    assert described["agree"] == "required · yes or no"
    assert described["subscribe"] == "optional · yes or no · default: Yes"
    assert described["env"] == "optional · one of: Development, Production · default: Production"
    assert described["tags"] == "required · choose 1 to 2 of: a, b, c"
    assert described["pets"] == "optional · any of: Cat, Dog · default: Dog"


def test_a_select_with_more_options_than_discord_holds_falls_back_to_the_web_form() -> None:
    huge = {"type": "string", "enum": [f"o{i}" for i in range(26)]}
    schema = {"type": "object", "properties": {"pick": huge}}
    assert layout_of(schema) == "web"
    payload = render_message(hf_of(schema), CTX)
    assert labels(payload) == [["Answer in the web form…", "Decline…", "Cancel"]]
    assert components(payload)[0][0]["custom_id"] == f"hg:{HF_ID}:web"
    assert CTX.form_url not in str(payload)  # the capability link is shown only to who may answer
    exactly = {
        "type": "object",
        "properties": {"pick": {"type": "string", "enum": [f"o{i}" for i in range(25)]}},
    }
    assert layout_of(exactly) == "select"


def test_agent_text_cannot_fire_mentions_links_or_markdown() -> None:
    message = (
        "@everyone @here <@123456789012345678> <@&223456789012345678> <#323456789012345678> "
        "[click](https://evil.example) **bold** `code` <t:1:R> </deploy:1>\n# Heading\n> quote\n-# small"
    )
    schema = {
        "type": "object",
        "title": "**T** @everyone",
        "properties": {"x": {"type": "string", "title": "<@1>"}},
    }
    embed = render_message(hf_of(schema, message, requester="[me](https://x)"), CTX)["embeds"][0]
    text = embed["description"]
    for live in ("@everyone", "@here", "<@1", "<@&", "<#", "<t:", "</", "\n# ", "\n-# "):
        assert live not in text, live
    # The agent's Markdown is rendered (our own marks), and its link shows where it goes.
    assert "**bold**" in text and "`code`" in text and "**Heading**" in text and "> quote" in text
    assert "[click](<https://evil.example>) (evil.example)" in text
    assert "@\u200beveryone" in text and "<\u200b#3234" in text
    assert embed["title"] == "\\*\\*T\\*\\* @\u200beveryone"
    assert fields({"embeds": [embed]})["Requested by"] == "\\[me\\](<https://x>)"
    assert "\\<\u200b@1\\>" in [f["name"] for f in embed["fields"]]


def test_long_text_is_clipped_to_discord_limits() -> None:
    long_title = "T" * 200
    properties = {
        f"field{i:02}": {"type": "string", "title": long_title, "description": "d" * 500} for i in range(32)
    }
    schema = {"type": "object", "title": "x" * 300, "properties": properties}
    payload = render_message(hf_of(schema, "m" * 8000), CTX)
    embed = payload["embeds"][0]
    assert embed_size(embed) <= EMBED_TOTAL
    assert len(embed["title"]) == 256 and embed["title"].endswith("…")
    assert 600 <= len(embed["description"]) <= 4096
    assert embed["description"].endswith(f"**[{READ_MORE}](<{CTX.form_url}>)**")
    assert len(embed["fields"]) <= 25
    assert all(len(f["name"]) <= 256 and len(f["value"]) <= 1024 for f in embed["fields"])
    assert embed["fields"][-1]["value"].endswith("more fields: open the form to see them")
    option = {"type": "string", "enum": ["o" * 150, "p"]}
    buttons = components(render_message(hf_of({"type": "object", "properties": {"o": option}}), CTX))[0]
    assert len(buttons[0]["label"]) == 80
    many = {"type": "string", "enum": [f"{i}" + "o" * 150 for i in range(10)]}
    (select,) = components(render_message(hf_of({"type": "object", "properties": {"o": many}}), CTX))[0]
    assert all(len(o["label"]) <= 100 and len(o["value"]) <= 100 for o in select["options"])


@pytest.mark.parametrize(
    ("status", "outcome", "line", "colour"),
    [
        (Status.ACCEPTED, {"content": {"approved": True}, "by": "Ada (1)"}, "Approved by Ada (1)", 0x2ECC71),
        (
            Status.ACCEPTED,
            {"content": {"approved": False}, "by": "Ada (1)"},
            "Not approved by Ada (1)",
            0x2ECC71,
        ),
        (
            Status.DECLINED,
            {"reason": "too *risky*", "by": "Bo (2)"},
            "Declined by Bo (2): too \\*risky\\*",
            0xE74C3C,
        ),
        (Status.DECLINED, {"by": "Bo (2)"}, "Declined by Bo (2): No reason given", 0xE74C3C),
        (Status.CANCELED, {"by": "Bo (2)"}, "Canceled by Bo (2): No reason given", 0x607D8B),
        (
            Status.CANCELED,
            {"reason": "Request canceled by the agent", "by": "ci-bot", "via": "agent"},
            "Withdrawn by the agent",
            0x607D8B,
        ),
        (
            Status.EXPIRED,
            {"reason": "Request timed out after 3 minutes", "via": "timeout"},
            "Expired: Request timed out after 3 minutes",
            0x979C9F,
        ),
    ],
)
def test_every_outcome_removes_the_components_and_says_who_and_when(
    status: Status, outcome: dict[str, Any], line: str, colour: int
) -> None:
    payload = render_message(ended(hf_of(APPROVAL), status, **outcome), CTX)
    assert payload["components"] == []
    assert fields(payload)["Outcome"] == f"{line} · <t:{int(hf_of(APPROVAL).created_at + 60)}:f>"
    assert payload["embeds"][0]["color"] == colour
    assert "Answer by" not in fields(payload)


def test_an_accepted_form_lists_the_answers_in_schema_order() -> None:
    content = {"name": "Ada", "age": 36, "agree": True, "env": "prod", "tags": ["a", "c"], "notes": "**hi**"}
    hf = ended(
        hf_of(schema_of("name", "notes", "age", "agree", "env", "tags")),
        Status.ACCEPTED,
        content=content,
        by="Ada (1)",
    )
    shown = fields(render_message(hf, CTX))
    assert list(shown)[2:] == ["Name", "notes", "age", "agree", "env", "tags"]
    assert shown["Outcome"].startswith("Answered by Ada (1)")
    assert (shown["age"], shown["agree"], shown["env"], shown["tags"]) == ("36", "Yes", "Production", "a, c")
    assert shown["notes"] == "\\*\\*hi\\*\\*"


def test_field_hints_for_one_sided_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "low": {"type": "integer", "minimum": 1},
            "high": {"type": "number", "maximum": 2.5},
            "short": {"type": "string", "maxLength": 1},
            "exact": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
                "minItems": 2,
                "maxItems": 2,
            },
        },
    }
    assert field_hint(schema, "low") == "optional · a whole number at least 1"
    assert field_hint(schema, "high") == "optional · a number at most 2.5"
    assert field_hint(schema, "short") == "optional · text · at most 1 characters"
    assert field_hint(schema, "exact") == "optional · choose exactly 2 of: a, b"
    wide = ", ".join(f"w{i}" for i in range(15))
    assert field_hint({"properties": PROPERTIES}, "wide") == f"optional · choose at most 4 of: {wide}"
