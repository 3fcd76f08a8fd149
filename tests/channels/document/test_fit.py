"""Cutting a rendering at a block or line boundary (docs/rendering.md#length)."""

from __future__ import annotations

import pytest

from channels.document.fit import fit
from channels.document.model import Block, Code, ListBlock, Paragraph, Quote, Table, plain_block, plain_text
from channels.document.parse import parse
from tests.channels.markdown_cases import RICH


def size(block: Block) -> int:
    return len(plain_block(block)) + 2


DIFF = "```diff\n" + "\n".join(f"+ line {i:03}" for i in range(200)) + "\n```"


def test_what_fits_is_kept_whole() -> None:
    blocks = parse(RICH).blocks
    kept, cut = fit(blocks, size, 10_000)
    assert kept == list(blocks) and not cut


@pytest.mark.parametrize("budget", [30, 100, 333, 1000, 2000])
def test_a_code_block_is_cut_at_a_line(budget: int) -> None:
    kept, cut = fit(parse("intro\n\n" + DIFF).blocks, size, budget)
    assert cut and sum(size(block) for block in kept) <= budget
    code = kept[-1]
    assert isinstance(code, Code) and code.language == "diff"
    assert all(line.startswith("+ line ") and len(line) == 10 for line in code.text.split("\n"))


def test_a_list_is_cut_at_an_item_and_a_table_at_a_row() -> None:
    listing = parse("\n".join(f"- item {i}" for i in range(50))).blocks
    kept, cut = fit(listing, size, 100)
    assert cut and isinstance(kept[0], ListBlock) and 0 < len(kept[0].items) < 50
    table = parse("| a |\n|---|\n" + "\n".join(f"| row {i} |" for i in range(50))).blocks
    kept, cut = fit(table, size, 100)
    assert cut and isinstance(kept[0], Table) and 0 < len(kept[0].rows) < 50


def test_a_quote_of_one_long_paragraph_is_cut_at_a_line() -> None:
    quote = parse("> " + "\n> ".join(f"line {i}" for i in range(100))).blocks
    kept, cut = fit(quote, size, 80)
    assert cut and isinstance(kept[0], Quote)
    text = plain_text(kept)
    assert text.startswith("> line 0\n> line 1") and all(
        line.startswith("> line ") for line in text.split("\n")
    )


def test_one_long_line_is_cut_at_a_word_and_one_long_word_at_a_character() -> None:
    kept, cut = fit(parse("word " * 1000).blocks, size, 100)
    assert cut and isinstance(kept[0], Paragraph)
    assert plain_text(kept).rstrip().split(" ") == ["word"] * len(plain_text(kept).split())
    kept, cut = fit(parse("x" * 5000).blocks, size, 100)
    assert cut and 0 < len(plain_text(kept)) <= 98


def test_the_styles_of_a_cut_line_are_kept() -> None:
    kept, _ = fit(parse("**" + "bold " * 50 + "end**").blocks, size, 40)
    (paragraph,) = kept
    assert isinstance(paragraph, Paragraph) and all(run.bold for run in paragraph.runs)


def test_nothing_fits_says_so() -> None:
    kept, cut = fit(parse("---\n\nmore").blocks, lambda block: 10, 5)
    assert kept == [] and cut
