"""Finding the line of a key in a TOML text (``schemas.toml_lines``), so that a mistake pydantic
finds in the parsed values is shown at its line."""

from __future__ import annotations

import tomllib

import pytest

from schemas.toml_lines import KeyLines

TEXT = """\
# policies
[policies.deploys]
callers = ["deploy-bot"]   # a comment with [brackets] and "quotes"
timeout = 900
approvers = ["slack:U1", "slack:group:S1",
   "discord:user:1",  # comment, "not an element"
   'operator:a', "with ] bracket"
]

[policies.deploys.targets]
slack = "C0"

[policies."quoted name"]
targets = { slack = "C1", teams = "x" }
a.b = 1
"""


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        (("policies",), 2),
        (("policies", "deploys"), 2),
        (("policies", "deploys", "callers"), 3),
        (("policies", "deploys", "callers", 0), 3),
        (("policies", "deploys", "timeout"), 4),
        (("policies", "deploys", "approvers"), 5),
        (("policies", "deploys", "approvers", 1), 5),
        (("policies", "deploys", "approvers", 2), 6),
        (("policies", "deploys", "approvers", 3), 7),
        (("policies", "deploys", "approvers", 4), 7),
        (("policies", "deploys", "approvers", 9), 5),
        (("policies", "deploys", "targets"), 10),
        (("policies", "deploys", "targets", "slack"), 11),
        (("policies", "quoted name", "targets", "teams"), 14),
        (("policies", "quoted name", "a", "b"), 15),
        (("policies", "deploys", "missing"), 2),
    ],
)
def test_a_key_is_found_at_its_line(loc: tuple[str | int, ...], line: int) -> None:
    tomllib.loads(TEXT)  # the locator is only asked about text tomllib accepted
    assert KeyLines(TEXT).line_of(loc) == line


def test_a_key_that_is_nowhere_has_no_line() -> None:
    assert KeyLines(TEXT).line_of(("other",)) is None
    assert KeyLines("").line_of(("policies", "x")) is None
