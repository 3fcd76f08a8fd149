"""Cutting a rendering to what a surface holds, at a block or line boundary (docs/rendering.md#length).

A channel measures a block in its own units (characters of its markup, bytes of a card) and asks
``fit`` for the leading blocks that fit its budget. A block that does not fit whole is split where a
reader expects a break (a code block or a paragraph at its lines, a list at its items, a quote at its
blocks, a table at its rows, a long line at its words) and as much of it as fits is kept. The caller
then adds "Read the whole request" with the link to the web page, which shows everything: nothing is
dropped without saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from channels.document.model import Block, Code, Heading, ListBlock, Paragraph, Quote, Run, Runs, Table

READ_MORE = "Read the whole request"
"""The words of the link every surface adds after a cut."""

Size = Callable[[Block], int]

_WORDS = re.compile(r"\s*\S+\s*|\s+")


def fit(blocks: Sequence[Block], size: Size, budget: int) -> tuple[list[Block], bool]:
    """The leading ``blocks`` (the last one possibly split) whose sizes add up to at most ``budget``,
    and whether anything was left out."""
    kept: list[Block] = []
    left = budget
    for block in blocks:
        cost = size(block)
        if cost <= left:
            kept.append(block)
            left -= cost
            continue
        part = _largest_part(block, size, left)
        if part is not None:
            kept.append(part)
        return kept, True
    return kept, False


def _largest_part(block: Block, size: Size, budget: int) -> Block | None:
    """The largest leading part of ``block`` within ``budget``, or ``None`` if not even a word fits."""
    line = _one_line(block)
    if line is not None:
        return _line_part(block, line, size, budget)
    pieces = _pieces(block)
    if pieces is None:
        return None
    low, high = 0, len(pieces)
    while low < high:
        middle = (low + high + 1) // 2
        if size(_join(block, pieces[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    if low == len(pieces):
        return block
    if low > 0:
        return _join(block, pieces[:low])
    # Not even the first piece fits: cut inside it (a line at its words, a word at its characters).
    first = _largest_part(pieces[0], size, budget)
    return None if first is None else _join(block, [first])


def _one_line(block: Block) -> str | None:
    """The text of a block that is one line (a code line, a paragraph without breaks), else ``None``."""
    if isinstance(block, Code):
        return None if "\n" in block.text else block.text
    if isinstance(block, Paragraph | Heading):
        return None if any(run.text == "\n" for run in block.runs) else "".join(r.text for r in block.runs)
    return None


def _line_part(block: Block, text: str, size: Size, budget: int) -> Block | None:
    """The largest leading part of a one-line block within ``budget``: cut after a word, or inside
    the first word when not even that fits. A binary search over the cut's offset, so a line of
    thousands of words is measured a few dozen times, not once a word."""
    ends = [match.end() for match in _WORDS.finditer(text)]
    first = _longest_prefix(block, ends, size, budget)
    if first is not None or not ends:
        return first
    word = ends[0]
    step = max(1, word // 64)
    return _longest_prefix(block, list(range(step, word, step)), size, budget)


def _longest_prefix(block: Block, ends: list[int], size: Size, budget: int) -> Block | None:
    low, high = 0, len(ends)
    while low < high:
        middle = (low + high + 1) // 2
        if size(_prefix(block, ends[middle - 1])) <= budget:
            low = middle
        else:
            high = middle - 1
    return _prefix(block, ends[low - 1]) if low else None


def _prefix(block: Block, end: int) -> Block:
    if isinstance(block, Code):
        return replace(block, text=block.text[:end])
    assert isinstance(block, Paragraph | Heading)
    return replace(block, runs=_slice_runs(block.runs, 0, end))


def _pieces(block: Block) -> list[Block] | None:
    """``block`` in the smallest pieces a cut may fall between, or ``None`` if it has none."""
    if isinstance(block, Code):
        lines = block.text.split("\n")
        return [replace(block, text=line) for line in lines]
    if isinstance(block, Paragraph | Heading):
        run_lines = _split_runs(block.runs)
        return [replace(block, runs=line) for line in run_lines]
    if isinstance(block, Quote):
        if len(block.blocks) != 1:
            return [Quote((child,)) for child in block.blocks] or None
        inner = _pieces(block.blocks[0])
        return None if inner is None else [Quote((piece,)) for piece in inner]
    if isinstance(block, ListBlock):
        if len(block.items) != 1:
            return [replace(block, items=(item,)) for item in block.items] or None
        (item,) = block.items
        if len(item) > 1:
            return [replace(block, items=((child,),)) for child in item]
        inner = _pieces(item[0]) if item else None
        return None if inner is None else [replace(block, items=((piece,),)) for piece in inner]
    if isinstance(block, Table):
        return [replace(block, rows=(row,)) for row in block.rows] if len(block.rows) > 1 else None
    return None


def _join(block: Block, pieces: Sequence[Block]) -> Block:
    """Pieces of ``block`` (from ``_pieces``) put back together as one block."""
    if isinstance(block, Code):
        texts = [piece.text for piece in pieces if isinstance(piece, Code)]
        separator = "\n" if "\n" in block.text else ""
        return replace(block, text=separator.join(texts))
    if isinstance(block, Paragraph | Heading):
        breaks: Runs = (Run("\n"),) if any(r.text == "\n" for r in block.runs) else ()
        runs: list[Run] = []
        for i, piece in enumerate(pieces):
            assert isinstance(piece, Paragraph | Heading)
            runs.extend((*(breaks if i else ()), *piece.runs))
        return replace(block, runs=tuple(runs))
    if isinstance(block, Quote):
        children = [child for piece in pieces if isinstance(piece, Quote) for child in piece.blocks]
        if len(block.blocks) == 1:
            return Quote((_join(block.blocks[0], children),))
        return Quote(tuple(children))
    if isinstance(block, ListBlock):
        items = [item for piece in pieces if isinstance(piece, ListBlock) for item in piece.items]
        if len(block.items) != 1:
            return replace(block, items=tuple(items))
        children = [child for item in items for child in item]
        if len(block.items[0]) > 1:
            return replace(block, items=(tuple(children),))
        return replace(block, items=((_join(block.items[0][0], children),),))
    if isinstance(block, Table):
        return replace(
            block, rows=tuple(row for piece in pieces if isinstance(piece, Table) for row in piece.rows)
        )
    return block


def _split_runs(runs: Runs) -> list[Runs]:
    """Runs cut at their line breaks (the breaks themselves left out)."""
    lines: list[list[Run]] = [[]]
    for run in runs:
        if run.text == "\n":
            lines.append([])
        else:
            lines[-1].append(run)
    return [tuple(line) for line in lines]


def _slice_runs(runs: Runs, start: int, end: int) -> Runs:
    out: list[Run] = []
    offset = 0
    for run in runs:
        low, high = max(start, offset), min(end, offset + len(run.text))
        if low < high:
            out.append(replace(run, text=run.text[low - offset : high - offset]))
        offset += len(run.text)
    return tuple(out)
