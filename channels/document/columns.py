"""What several surfaces share to show text they cannot style: a table as aligned monospace columns,
and runs merged back where a cut left neighbours of one style apart."""

from __future__ import annotations

from itertools import groupby

from channels.document.model import Run, Runs, Table, plain_runs

MAX_CELL = 60
"""Characters of one table cell shown in columns (a longer one ends in an ellipsis)."""


def table_text(table: Table, *, separator: str = "  ", rule_joint: str = "  ") -> str:
    """``table`` as aligned columns of monospace text: the head, a line of dashes, the rows. Each
    column keeps its alignment; ``separator`` goes between cells, ``rule_joint`` between dashes."""
    head = [table.head] if table.head else []
    rows = [[_cell(cell) for cell in row] for row in (*head, *table.rows)]
    count = max((len(row) for row in rows), default=0)
    rows = [row + [""] * (count - len(row)) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(count)]
    aligns = [*table.aligns, *([None] * count)]

    def line(row: list[str]) -> str:
        cells = []
        for i, cell in enumerate(row):
            if aligns[i] == "right":
                cells.append(cell.rjust(widths[i]))
            elif aligns[i] == "center":
                cells.append(cell.center(widths[i]))
            else:
                cells.append(cell.ljust(widths[i]))
        return separator.join(cells).rstrip()

    lines = [line(row) for row in rows]
    if head:
        lines.insert(1, rule_joint.join("-" * width for width in widths))
    return "\n".join(lines)


def merged(runs: Runs) -> list[Run]:
    """``runs`` with neighbours of the same style joined (line breaks kept apart)."""
    out: list[Run] = []
    for key, group in groupby(runs, key=_merge_key):
        texts = [run.text for run in group]
        if key[0]:
            out.extend(Run("\n") for _ in texts)
        else:
            out.append(Run("".join(texts), *key[1:]))
    return out


def _merge_key(run: Run) -> tuple[bool, bool, bool, bool, bool, str | None]:
    return (run.text == "\n", run.bold, run.italic, run.strike, run.code, run.href)


def _cell(runs: Runs) -> str:
    text = " ".join(plain_runs(runs).split())
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "\u2026"
