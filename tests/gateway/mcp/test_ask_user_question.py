"""``ask_user_question``: its arguments, its flat schema, and end to end with the official
MCP client in both eras, answered on the web form and in a Slack modal (through the fake Slack).
See docs/tools.md#ask_user_question."""

from __future__ import annotations

import json
from typing import Any

import pytest

from channels.base import RenderContext
from channels.discord.modal import form_modal, form_steps
from channels.document.model import plain_text
from channels.document.parse import parse
from channels.registry import CHANNELS
from channels.slack.blocks import layout_of
from channels.slack.modal import form_view
from gateway.mcp.ask_user_question import answers_of, parse_arguments
from gateway.mcp.call import Question
from schemas.errors import InvalidRequestError
from schemas.models import HumanFunction
from schemas.other_fields import OTHER, OTHER_WITHOUT_TEXT, TEXT_WITHOUT_OTHER
from schemas.settings import Settings
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, send, submission
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import ERAS, Era, call_elicit, text_of

FORMAT: dict[str, Any] = {
    "question": "How should I format the output?",
    "header": "Format",
    "options": [
        {"label": "Summary", "description": "Brief overview of key points"},
        {"label": "Detailed", "description": "Full explanation with examples"},
    ],
    "multiSelect": False,
}
SECTIONS: dict[str, Any] = {
    "question": "Which sections should I include?",
    "header": "Sections",
    "options": [
        {"label": "Introduction", "description": ""},
        {"label": "Conclusion", "description": "A closing summary"},
        {"label": "Appendix", "description": "Raw data"},
    ],
    "multiSelect": True,
}
SETTINGS = Settings(_env_file=None)


def hf_of(question: Question, hf_id: str, *, deadline: float) -> HumanFunction:
    """The pending web request a question opens."""
    return HumanFunction(
        id=hf_id,
        requester="anonymous",
        channel="web",
        message=question.message,
        request_schema=question.schema,
        created_at=0,
        deadline=deadline,
        form_secret="s" * 32,
        other_fields=question.other_fields,
    )


def test_questions_become_a_required_select_with_other_and_an_optional_text_each() -> None:
    question = parse_arguments({"questions": [FORMAT, SECTIONS], "uiType": "web"}, SETTINGS)
    assert question.channel == "web"
    assert question.message == (
        "**Format**: How should I format the output?\n\n"
        "- **Summary**: Brief overview of key points\n"
        "- **Detailed**: Full explanation with examples\n\n"
        "**Sections**: Which sections should I include?\n\n"
        "- **Introduction**\n"
        "- **Conclusion**: A closing summary\n"
        "- **Appendix**: Raw data"
    )
    assert question.schema == {
        "type": "object",
        "properties": {
            "q1": {
                "title": "Format",
                "description": "How should I format the output?",
                "type": "string",
                "oneOf": [
                    {"const": "Summary", "title": "Summary \u2014 Brief overview of key points"},
                    {"const": "Detailed", "title": "Detailed \u2014 Full explanation with examples"},
                    {"const": OTHER, "title": "Other (write your own answer)"},
                ],
            },
            "q1_other": {
                "type": "string",
                "title": "Format: Other",
                "description": "Your own answer, if you chose Other",
            },
            "q2": {
                "title": "Sections",
                "description": "Which sections should I include?",
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "Introduction", "title": "Introduction"},
                        {"const": "Conclusion", "title": "Conclusion \u2014 A closing summary"},
                        {"const": "Appendix", "title": "Appendix \u2014 Raw data"},
                        {"const": OTHER, "title": "Other (write your own answer)"},
                    ]
                },
                "minItems": 1,
            },
            "q2_other": {
                "type": "string",
                "title": "Sections: Other",
                "description": "Your own answer, if you chose Other",
            },
        },
        "required": ["q1", "q2"],
    }
    assert question.other_fields == {"q1": "q1_other", "q2": "q2_other"}
    assert parse_arguments({"questions": [FORMAT]}, SETTINGS).message == (
        "How should I format the output?\n\n"
        "- **Summary**: Brief overview of key points\n"
        "- **Detailed**: Full explanation with examples"
    )


def test_the_plain_format_asks_the_questions_as_lines() -> None:
    plain = Settings(_env_file=None, message_format="plain")
    question = parse_arguments({"questions": [FORMAT, SECTIONS]}, plain)
    assert (
        question.message
        == "Format: How should I format the output?\nSections: Which sections should I include?"
    )
    assert parse_arguments({"questions": [FORMAT]}, plain).message == "How should I format the output?"


def test_a_header_or_label_is_a_name_never_markup() -> None:
    asked = {
        "question": "Pick *one*",
        "header": "**H**",
        "options": [
            {"label": "[x](https://e.example)", "description": "d"},
            {"label": "b", "description": ""},
        ],
        "multiSelect": False,
    }
    message = parse_arguments({"questions": [asked, SECTIONS]}, SETTINGS).message
    document = parse(message)
    assert plain_text(document.blocks).startswith("**H**: Pick one\n\n- [x](https://e.example): d\n- b")


def test_answers_read_back_in_option_order_with_the_own_answer_verbatim_and_last() -> None:
    question = parse_arguments({"questions": [FORMAT, SECTIONS]}, SETTINGS)
    hf = hf_of(question, "1" * 16, deadline=1)
    content = {"q1": OTHER, "q1_other": " As a table ", "q2": [OTHER, "Appendix", "Introduction"]}
    assert answers_of(hf, content | {"q2_other": "Glossary"}) == {
        "How should I format the output?": " As a table ",
        "Which sections should I include?": "Introduction, Appendix, Glossary",
    }
    assert answers_of(hf, {"q1": "Summary", "q2": ["Conclusion"]}) == {
        "How should I format the output?": "Summary",
        "Which sections should I include?": "Conclusion",
    }


@pytest.mark.parametrize(
    ("questions", "error"),
    [
        (None, "questions: is required"),
        ([], "questions: must be a list of 1 to 4 questions (got 0)"),
        ([FORMAT] * 5, "questions: must be a list of 1 to 4 questions (got 5)"),
        (
            [FORMAT | {"header": "Output format"}],
            "questions[0].header: must be at most 12 characters (got 13)",
        ),
        ([FORMAT | {"options": FORMAT["options"][:1]}], "questions[0].options: must be a list of 2 to 4"),
        ([FORMAT | {"multiSelect": "yes"}], "questions[0].multiSelect: must be true or false"),
        ([{k: v for k, v in FORMAT.items() if k != "question"}], "questions[0].question: is required"),
        ([FORMAT, FORMAT], "questions[1].question: must differ from questions[0].question"),
        ([FORMAT | {"extra": 1}], "questions[0]: unknown field(s): extra"),
        (
            [FORMAT | {"options": [{"label": "A"}, {"label": "A", "description": ""}]}],
            ".options[0].description",
        ),
        ([FORMAT | {"options": [{"label": OTHER, "description": ""}] * 2}], f'label: "{OTHER}" is reserved'),
    ],
)
def test_invalid_arguments_name_the_argument_and_the_rule(questions: object, error: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        parse_arguments({} if questions is None else {"questions": questions}, SETTINGS)
    assert str(caught.value).startswith("Invalid arguments: ")
    assert error in str(caught.value)


@pytest.mark.parametrize("era", ERAS)
async def test_answered_on_the_web_form_with_other_fixed_after_an_error(
    start_gateway: StartGateway, era: Era
) -> None:
    gateway = start_gateway()
    call = start_call(
        gateway.url, {"questions": [FORMAT, SECTIONS], "uiType": "web"}, era=era, tool="ask_user_question"
    )
    form = await call.form_url()
    page = await post_form(
        form, {"hg-action": "accept", "f.q1": OTHER, "f.q2": "Appendix", "f.q2_other": "x"}
    )
    assert page.status_code == 422
    assert OTHER_WITHOUT_TEXT in page.text and TEXT_WITHOUT_OTHER in page.text
    fields: dict[str, str | list[str]] = {
        "hg-action": "accept",
        "f.q1": OTHER,
        "f.q1_other": "A table, then a summary",
        "f.q2": ["Appendix", "Introduction", OTHER],
        "f.q2_other": "Glossary",
    }
    assert (await post_form(form, fields)).status_code == 303
    result = await call.result()
    answers = {
        "How should I format the output?": "A table, then a summary",
        "Which sections should I include?": "Introduction, Appendix, Glossary",
    }
    assert text_of(result) == (
        'User answered: {"How should I format the output?":"A table, then a summary",'
        '"Which sections should I include?":"Introduction, Appendix, Glossary"}'
    )
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content == {
        "action": "accept",
        "answers": answers,
        "id": result.structured_content["id"],
        "answeredBy": {"channel": "web", "id": None, "name": "web form"},
    }


async def test_declining_returns_elicits_text_and_bad_arguments_are_a_tool_error(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"questions": [FORMAT], "uiType": "web"}, tool="ask_user_question")
    await post_form(await call.form_url(), {"hg-action": "decline", "hg-reason": "Not now"})
    result = await call.result()
    assert text_of(result) == "User declined: Not now" and result.is_error
    assert result.structured_content is not None and result.structured_content["action"] == "decline"
    bad = await call_elicit(gateway.url, {"questions": [FORMAT | {"header": ""}]}, tool="ask_user_question")
    assert bad.is_error and text_of(bad) == "Invalid arguments: questions[0].header: must not be empty"


def view_inputs(view: dict[str, Any]) -> list[tuple[str, str]]:
    return [(b["block_id"], b["element"]["type"]) for b in view["blocks"] if b["type"] == "input"]


async def test_answered_in_a_slack_modal_with_other_and_the_message_updated(
    start_gateway: StartGateway, slack: FakeSlack
) -> None:
    gateway = start_gateway(**slack.env())
    call = start_call(gateway.url, {"questions": [FORMAT, SECTIONS]}, tool="ask_user_question")  # slack
    (message,) = await slack.posted()
    await send(gateway.url, click(message, "hg:respond", "U1", slack.url))
    view = await slack.opened_view()
    assert view_inputs(view) == [
        ("f0", "radio_buttons"),
        ("f1", "plain_text_input"),
        ("f2", "checkboxes"),
        ("f3", "plain_text_input"),
    ]
    other_text = {"type": "plain_text_input", "value": None}
    missing = {
        "f0": {"type": "radio_buttons", "selected_option": {"value": "2"}},  # Other
        "f1": other_text,
        "f2": {"type": "checkboxes", "selected_options": [{"value": "0"}]},
        "f3": other_text,
    }
    response = await send(gateway.url, submission(view, missing, "U1"))
    assert response.json() == {
        "response_action": "errors",
        "errors": {"f1": "Write your own answer here, or choose one of the options"},
    }
    fixed = missing | {"f1": {"type": "plain_text_input", "value": "Bullet points"}}
    response = await send(gateway.url, submission(view, fixed, "U1"))
    assert response.status_code == 200 and response.content in (b"", b"{}")
    result = await call.result()
    assert text_of(result) == (
        'User answered: {"How should I format the output?":"Bullet points",'
        '"Which sections should I include?":"Introduction"}'
    )
    update = await slack.updated()
    texts = [
        e.get("text", "") for b in update["blocks"] for e in [b.get("text") or {}] if isinstance(e, dict)
    ]
    assert any("Answered by Ada Lovelace (U1)" in str(text) for text in texts)


def test_four_questions_render_on_every_channel_with_other_offered() -> None:
    questions = [FORMAT | {"question": f"Q{n}?", "multiSelect": n % 2 == 1} for n in range(4)]
    question = parse_arguments({"questions": questions}, SETTINGS)
    hf = hf_of(question, "2" * 16, deadline=10**10)
    context = RenderContext(form_url="http://127.0.0.1:8000/f/x", now=0)
    assert "Other (write your own answer)" in CHANNELS["web"].render(hf, context)
    assert CHANNELS["teams"].render(hf, context)["body"]
    assert layout_of(hf) == "modal" and "Other (write your own answer)" in json.dumps(form_view(hf))
    steps = form_steps(question.schema)
    assert sum(len(step) for step in steps) == 8
    assert "Other (write your own answer)" in json.dumps([form_modal(hf, n) for n in range(len(steps))])
