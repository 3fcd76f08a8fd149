"""Every place in the README and docs/ that lists the channels, the settings or the commands is
checked against the code's own list (the channel registry, the settings model, the CLI parser), so
a channel, a setting or a command added to the code fails here until each listing has it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from channels.registry import CHANNELS
from gateway.cli import build_parser
from schemas.setting_errors import env_name
from schemas.settings import Settings
from tests.test_docs_contract import commands

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

EVERY_CHANNEL = tuple(CHANNELS)
"""Every channel, in ``uiType`` order."""

POSTING = tuple(name for name, channel in CHANNELS.items() if channel.posts)
"""The channels that post (a step, a target, a reminder); the web form posts nothing."""

NAME = "|".join(EVERY_CHANNEL)
JOINED = re.compile(rf"`(?:{NAME})(?:,(?:{NAME}))+`|\b(?:{NAME})(?:,(?:{NAME})){{2,}}\b")
"""A comma-joined list of channel names, as ``--channels`` takes: ``slack,discord,teams``."""

SPANS = re.compile(rf"`(?:{NAME})`(?:(?:,| or| and)\s+`(?:{NAME})`){{2,}}")
"""Three or more channel names in code spans in a row: `` `slack`, `discord` or `web` ``."""


def listings() -> list[tuple[str, tuple[str, ...]]]:
    """(where, the names listed) of each listing of channel names in the pages."""
    found = []
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for match in [*JOINED.finditer(text), *SPANS.finditer(text)]:
            names = tuple(re.findall(rf"\b(?:{NAME})\b", match.group()))
            found.append((f"{page.name}: {match.group()}", names))
    return found


LISTINGS = listings()


def test_the_pages_have_listings_of_channels() -> None:
    assert len(LISTINGS) >= 5


@pytest.mark.parametrize(("where", "names"), LISTINGS, ids=[where for where, _ in LISTINGS])
def test_each_listing_of_channels_lists_every_channel_or_every_one_that_posts(
    where: str, names: tuple[str, ...]
) -> None:
    assert names in (EVERY_CHANNEL, POSTING), f"{where}: the channels are {', '.join(EVERY_CHANNEL)}"


def readme_table(heading: str) -> list[str]:
    """The rows (header and rule included) of the first table under ``## heading`` of the README."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def readme_settings() -> list[str]:
    """The variables of the README's configuration table, abbreviations (``_ANONYMOUS_RATE_LIMIT``
    beside ``HUMANGATE_RATE_LIMIT``) read as the setting they shorten."""
    known = {env_name(name) for name in Settings.model_fields}
    named = []
    for row in readme_table("Configuration")[2:]:
        cell = row.split("|")[1]
        full = re.findall(r"`(_?[A-Z][A-Z0-9_]+)`", cell)
        named += [name for name in full if not name.startswith("_")]
        lead = next(name for name in full if not name.startswith("_"))
        for short in (name for name in full if name.startswith("_")):
            parts = lead.split("_")
            expanded = [f"{'_'.join(parts[:cut])}{short}" for cut in range(len(parts) - 1, 0, -1)]
            named.append(next((name for name in expanded if name in known), short))
    return named


def test_the_readme_configuration_table_lists_every_setting_and_no_other() -> None:
    named = readme_settings()
    known = [env_name(name) for name in Settings.model_fields]
    assert sorted(set(known) - set(named)) == []
    assert sorted(set(named) - set(known)) == []


@pytest.mark.parametrize("words", list(commands(build_parser())), ids=" ".join)
def test_every_command_is_in_the_readme_commands_table(words: tuple[str, ...]) -> None:
    row = next((line for line in readme_table("Commands") if f"`humangate {words[0]}" in line), None)
    assert row is not None, f"humangate {words[0]} is not in the README's Commands table"
    for word in words[1:]:
        assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", row.split("|")[1]), f"{words}: {row}"
