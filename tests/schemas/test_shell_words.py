"""Splitting a shell command into the commands it runs (schemas.shell_words): separators, quotes,
escapes, subshells and substitutions, and what it refuses to split. No I/O."""

from __future__ import annotations

import pytest

from schemas.shell_words import split_command

SPLITS: list[tuple[str, tuple[str, ...] | None]] = [
    ("npm test", ("npm test",)),
    ("a && b || c ; d | e |& f & g", ("a", "b", "c", "d", "e", "f", "g")),
    ("a\nb\n\nc", ("a", "b", "c")),
    ('echo "a && b; c | d"', ('echo "a && b; c | d"',)),
    ("echo 'a && b'", ("echo 'a && b'",)),
    ("echo $'a\\' && b'", ("echo $'a\\' && b'",)),
    ("echo a\\;b \\&\\& c", ("echo a\\;b \\&\\& c",)),
    ("a \\\nb", ("a b",)),  # a line continuation joins
    ("npm test $(rm -rf /)", ("rm -rf /", "npm test $(rm -rf /)")),
    ("npm test `rm -rf /`", ("rm -rf /", "npm test `rm -rf /`")),
    ('echo "$(a; b)"', ("a", "b", 'echo "$(a; b)"')),
    ("echo '$(a)'", ("echo '$(a)'",)),
    ("diff <(ls a) >(tee b)", ("ls a", "tee b", "diff <(ls a) >(tee b)")),
    ("(cd x && make) > log", ("cd x", "make", "> log")),
    ("echo $(echo $(id))", ("id", "echo $(id)", "echo $(echo $(id))")),
    ("cmd > f 2>&1 &> g >| h <&0", ("cmd > f 2>&1 &> g >| h <&0",)),
    ("cat <<< word", ("cat <<< word",)),
    ("if a; then b; else c; fi", ("a", "b", "c")),
    ("while x; do y; done", ("x", "y")),
    ("{ a; b; }", ("a", "b")),
    ("! a", ("a",)),
    ("", ()),
    ("   ;; ", ()),
    ('echo "open', None),
    ("echo 'open", None),
    ("echo $(open", None),
    ("echo `open", None),
    ("echo )", None),
    ("cat <<EOF\nx\nEOF", None),
    ("x=(1 2)", None),
    ("case a in a) b;; esac", None),
    ("trailing \\", None),
]


@pytest.mark.parametrize(("command", "parts"), SPLITS)
def test_a_command_splits_into_the_commands_it_runs(command: str, parts: tuple[str, ...] | None) -> None:
    assert split_command(command) == parts
