"""The parse of an agent's text into the document model (docs/rendering.md)."""

from __future__ import annotations

import time

import pytest

from channels.document import document_of
from channels.document.model import (
    Code,
    Document,
    Heading,
    ListBlock,
    Paragraph,
    Quote,
    Rule,
    Run,
    Table,
    diff_kind,
    first_line,
    is_diff,
    plain_text,
)
from channels.document.parse import MAX_INLINE_MARKUP_CHARS, literal, parse
from schemas.settings import Settings, override_settings
from tests.channels.markdown_cases import HOSTILE, HOSTILE_IDS, RICH, RICH_WORDS, Hostile, is_safe_href


def links(document: Document) -> list[Run]:
    found: list[Run] = []

    def walk(blocks: tuple[object, ...]) -> None:
        for block in blocks:
            if isinstance(block, Paragraph | Heading):
                found.extend(run for run in block.runs if run.href is not None)
            elif isinstance(block, Quote):
                walk(block.blocks)
            elif isinstance(block, ListBlock):
                for item in block.items:
                    walk(item)
            elif isinstance(block, Table):
                for row in (block.head, *block.rows):
                    for cell in row:
                        found.extend(run for run in cell if run.href is not None)

    walk(document.blocks)
    return found


def test_every_construct_of_the_rich_request_has_its_block() -> None:
    blocks = parse(RICH).blocks
    kinds = [type(block).__name__ for block in blocks]
    assert kinds == [
        "Heading",
        "Paragraph",
        "ListBlock",
        "Quote",
        "Code",
        "Code",
        "Table",
        "Rule",
        "Paragraph",
    ]
    heading = blocks[0]
    assert isinstance(heading, Heading) and heading.level == 2
    assert Run("v2.1", bold=True) in heading.runs and Run("prod", italic=True) in heading.runs
    steps = blocks[2]
    assert isinstance(steps, ListBlock) and not steps.ordered and len(steps.items) == 3
    nested = steps.items[1][1]
    assert isinstance(nested, ListBlock) and nested.ordered and len(nested.items) == 2
    assert Run("restart the cache", strike=True) in steps.items[2][0].runs  # type: ignore[union-attr]
    sql, diff = blocks[4], blocks[5]
    assert isinstance(sql, Code) and sql.language == "sql" and not is_diff(sql)
    assert isinstance(diff, Code) and is_diff(diff)
    assert [diff_kind(line) for line in diff.text.split("\n")] == [
        "hunk",
        "hunk",
        "hunk",
        "removed",
        "added",
        "context",
    ]
    table = blocks[6]
    assert isinstance(table, Table) and table.aligns == ("left", "right", None)
    assert [[cell[0].text for cell in row] for row in table.rows] == [
        ["payments", "$120", "Ada"],
        ["search", "$80", "Bo"],
    ]
    assert isinstance(blocks[7], Rule)
    text = plain_text(blocks)
    assert all(word in text for word in RICH_WORDS)


def test_a_link_whose_label_is_not_its_address_is_followed_by_its_host() -> None:
    (paragraph,) = parse("see [the runbook](https://wiki.example.com/run) or <https://a.example/b>").blocks
    assert isinstance(paragraph, Paragraph)
    assert paragraph.runs == (
        Run("see "),
        Run("the runbook", href="https://wiki.example.com/run"),
        Run(" (wiki.example.com) or "),
        Run("https://a.example/b", href="https://a.example/b"),
    )


def test_a_mail_link_shows_its_address_and_an_autolinked_one_nothing_more() -> None:
    (paragraph,) = parse("[write](mailto:ops@example.com) <ops@example.com>").blocks
    assert isinstance(paragraph, Paragraph)
    assert [run.text for run in paragraph.runs] == ["write", " (ops@example.com) ", "ops@example.com"]
    assert paragraph.runs[2].href == "mailto:ops@example.com"


@pytest.mark.parametrize(
    "text",
    [
        "[x](javascript:alert(1))",
        "[x](JavaScript:alert(1))",
        "[x](data:text/html,hi)",
        "[x](ftp://h/f)",
        "[x](/rel)",
    ],
)
def test_only_http_https_and_mailto_links_are_links(text: str) -> None:
    document = parse(text)
    assert links(document) == []
    assert plain_text(document.blocks) == text


def test_raw_html_is_text() -> None:
    (paragraph,) = parse("a <b onclick='x'>bold</b> <script>alert(1)</script>").blocks
    assert plain_text((paragraph,)) == "a <b onclick='x'>bold</b> <script>alert(1)</script>"
    assert all(not (run.bold or run.href) for run in paragraph.runs)  # type: ignore[union-attr]


def test_a_line_break_in_a_paragraph_is_kept() -> None:
    (paragraph,) = parse("first line\nsecond line").blocks
    assert plain_text((paragraph,)) == "first line\nsecond line"


def test_an_image_is_its_link() -> None:
    (paragraph,) = parse("![the diagram](https://img.example/a.png)").blocks
    assert isinstance(paragraph, Paragraph)
    assert paragraph.runs == (Run("the diagram", href="https://img.example/a.png"), Run(" (img.example)"))


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_messages_are_parsed_quickly_safely_and_whole(case: Hostile) -> None:
    parse.cache_clear()
    started = time.perf_counter()
    document = parse(case.text)
    took = time.perf_counter() - started
    assert took < 0.5, f"{case.name} took {took:.3f} s"
    text = plain_text(document.blocks)
    assert all(visible in text for visible in case.visible), text[:200]
    assert all(host in text for host in case.hosts), text[:200]
    assert all(is_safe_href(run.href or "") for run in links(document))


@pytest.mark.parametrize("depth", [5, 9, 10, 11, 18, 19, 20, 21, 40])
def test_deep_nesting_never_drops_text(depth: int) -> None:
    for text in (
        "> " * depth + "deep",
        "- " * depth + "deep",
        "1. " * depth + "deep",
        "> - " * depth + "deep",
    ):
        document = parse(text + "\n\nafter")
        words = plain_text(document.blocks)
        assert "deep" in words and "after" in words, (text, document)


def test_a_paragraph_too_dense_with_markup_is_shown_as_written() -> None:
    dense = "*a* " * (MAX_INLINE_MARKUP_CHARS // 2 + 1)
    (paragraph,) = parse(dense.strip() + "\n\n**fine**").blocks[:1]
    assert isinstance(paragraph, Paragraph) and paragraph.runs == (Run(dense.strip()),)
    assert parse(dense.strip() + "\n\n**fine**").blocks[1] == Paragraph((Run("fine", bold=True),))


def test_literal_keeps_paragraphs_and_lines_as_written() -> None:
    document = literal("**not bold**\nsecond\n\n[x](https://a.example)")
    assert document.flattened
    assert document.blocks == (
        Paragraph((Run("**not bold**\nsecond"),)),
        Paragraph((Run("[x](https://a.example)"),)),
    )


def test_the_plain_format_shows_every_text_as_written() -> None:
    override_settings(Settings(message_format="plain"))
    try:
        assert document_of("**bold**") == literal("**bold**")
    finally:
        override_settings(None)
    assert document_of("**bold**").blocks == (Paragraph((Run("bold", bold=True),)),)


def test_first_line_is_the_first_words_a_person_reads() -> None:
    assert first_line(parse("\n\n## Deploy **v2**\n\nmore")) == "Deploy v2"
