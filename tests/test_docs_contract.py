"""The contract in ``docs/`` (docs/contract.md) says what the code does: every setting, route, command,
tool and agent-facing text of the code is on its page, the examples there are what the code
produces, and the pointers from code into the docs land on a heading. Neither can change without
the other."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import AliasChoices

from channels.registry import get_channel
from gateway.app import create_app
from gateway.cli import build_parser, check_policy_file
from gateway.mcp import answering, arguments, ask_user_question, elicit, texts
from gateway.mcp.tools import TOOLS
from schemas import results
from schemas.errors import HumangateError, RateLimitedError
from schemas.flat import check_flat_schema
from schemas.models import Action, Outcome, Status
from schemas.policies import parse_policies
from schemas.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

SOURCES = ("gateway", "channels", "workers", "schemas", "tests", "scripts", "deploy", ".ci")
"""Where code and configuration that may point into the docs live."""

POINTER = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
"""A pointer from code into the docs: ``docs/tools.md#results``."""


def flat(text: str) -> str:
    """Text with every run of whitespace as one space, so a Markdown line break never hides a match."""
    return " ".join(text.split())


def page(name: str) -> str:
    return flat((DOCS / name).read_text(encoding="utf-8"))


def env_name(name: str) -> str:
    """The environment variable a setting is read from: the platform's own name, else the prefixed one."""
    field = Settings.model_fields[name]
    if isinstance(field.validation_alias, AliasChoices):
        return str(field.validation_alias.choices[0])
    return f"{Settings.model_config.get('env_prefix', '')}{name}".upper()


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_is_in_settings_md(name: str) -> None:
    assert f"`{env_name(name)}`" in page("settings.md")


def test_the_docs_name_no_setting_that_does_not_exist() -> None:
    known = {env_name(name) for name in Settings.model_fields} | {"HUMANGATE_TEST_REDIS_URL"}
    for doc in sorted(DOCS.glob("*.md")):
        named = set(re.findall(r"\bHUMANGATE_[A-Z0-9_]*[A-Z0-9]\b", doc.read_text(encoding="utf-8")))
        assert named <= known, f"{doc.name} names {sorted(named - known)}"


def routes(entries: Iterable[Any], prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    """(path, methods) of every route, through FastAPI's included routers."""
    for route in entries:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from routes(included.routes, prefix + route.include_context.prefix)
        else:
            yield prefix + route.path, set(getattr(route, "methods", None) or ()) - {"HEAD"}


def table_rows(text: str) -> dict[str, str]:
    """The rows of a page's first Markdown table, by the code span that starts their first cell."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows: dict[str, str] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        first = re.match(r"\|\s*`([^`]+)`", line)
        if first:
            rows[first.group(1)] = line
    return rows


def test_every_route_is_in_http_md_with_its_methods() -> None:
    documented = table_rows((DOCS / "http.md").read_text(encoding="utf-8"))
    served: dict[str, set[str]] = {}
    for path, methods in routes(create_app(Settings()).routes):
        served.setdefault(path, set()).update(methods)
    for path, methods in served.items():
        assert path in documented, f"{path} is not in docs/http.md"
        cells = documented[path].split("|")
        assert set(re.findall(r"[A-Z]{3,}", cells[2])) == methods, f"{path}: {documented[path]}"
    assert set(documented) == set(served), "docs/http.md lists a path the app does not serve"


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf command of the parser, e.g. ``("keys", "create")``, with its parser beside."""
    found = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = True
            for name, sub in action.choices.items():
                yield from commands(sub, (*words, name))
    if not found:
        yield words


def parser_of(words: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize("words", list(commands(build_parser())), ids=" ".join)
def test_every_command_and_option_is_in_cli_md(words: tuple[str, ...]) -> None:
    rows = table_rows((DOCS / "cli.md").read_text(encoding="utf-8"))
    command = " ".join(("humangate", *words))
    row = next((line for key, line in rows.items() if re.match(rf"{re.escape(command)}\b", key)), None)
    assert row is not None, f"`{command}` has no row in docs/cli.md"
    for action in parser_of(words)._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", row), f"{command} {option}"
        if not action.option_strings:
            assert action.dest.upper() in row, f"{command} {action.dest}"
    assert f"## `humangate {words[0]}`" in page("cli.md")


def constants(module: ModuleType) -> dict[str, str]:
    """The module's own text constants (upper-case names bound to strings)."""
    return {name: value for name, value in vars(module).items() if name.isupper() and isinstance(value, str)}


AGENT_TEXTS = {
    **constants(texts),
    **constants(results),
    "NOT_FOUND_TEXT": answering.NOT_FOUND_TEXT,
    "arguments.PREFIX": arguments.PREFIX.strip(),
}
"""Every fixed text an agent may receive."""


@pytest.mark.parametrize("name", sorted(AGENT_TEXTS))
def test_every_agent_text_is_in_tools_md(name: str) -> None:
    assert flat(AGENT_TEXTS[name]) in page("tools.md")


def ended(action: Action, content: dict[str, Any] | None = None, reason: str | None = None) -> Outcome:
    status = {Action.ACCEPT: Status.ACCEPTED, Action.DECLINE: Status.DECLINED, Action.CANCEL: Status.CANCELED}
    return Outcome(status=status[action], action=action, content=content, reason=reason, via="web", at=0)


def error_text(call: Any, *args: Any) -> str:
    with pytest.raises(HumangateError) as raised:
        call(*args)
    return str(raised.value)


def test_the_examples_in_tools_md_are_what_the_code_says() -> None:
    settings = Settings()
    header = {"question": "Q?", "header": "Thirteen char", "options": [], "multiSelect": False}
    header["options"] = [{"label": label, "description": ""} for label in ("a", "b")]
    examples = [
        results.result_text(ended(Action.ACCEPT, {"approved": True, "reason": "Looks good to deploy"})),
        results.result_text(ended(Action.DECLINE)),
        f"User canceled: {results.timeout_reason(180)}",
        *(results.timeout_reason(seconds) for seconds in (60, 90, 300)),
        f"User canceled: {results.WITHDRAWN_REASON}",
        str(RateLimitedError("rate", "at most 60 new requests per minute", 12)),
        str(RateLimitedError("pending", "at most 100 pending requests", 5)),
        error_text(check_flat_schema, {"type": "object", "properties": {"user": {"type": "object"}}}),
        error_text(ask_user_question.parse_arguments, {"questions": [header]}, settings),
        error_text(elicit.parse_arguments, {"message": "Deploy?"}, settings),
        error_text(get_channel, "slack", settings),
    ]
    for example in examples:
        assert f"`{example}`" in page("tools.md")


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tool_is_in_tools_md_with_its_description(name: str) -> None:
    tool = TOOLS[name].definition
    assert f"## `{name}`" in page("tools.md")
    assert tool.description is not None and flat(tool.description) in page("tools.md")


def test_elicit_in_tools_md_is_the_tool_served() -> None:
    text = (DOCS / "tools.md").read_text(encoding="utf-8")
    block = re.search(r"## `elicit`.*?```json\n(.*?)```", text, re.DOTALL)
    assert block is not None
    documented = json.loads(block.group(1))
    served = elicit.TOOL
    assert documented == {
        "name": served.name,
        "description": served.description,
        "inputSchema": served.input_schema,
    }


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", doc.read_text(encoding="utf-8"), re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


def assert_lands(target: Path, anchor: str, where: str) -> None:
    assert target.is_file() or (target.is_dir() and not anchor), (
        f"{where} points to a missing {target.relative_to(ROOT)}"
    )
    assert not anchor or anchor in anchors(target), f"{where} points to a missing #{anchor}"


NOT_OURS = {"node_modules", ".venv", "__pycache__"}
"""Folders under the sources that hold other projects' files (tests/js/node_modules, a venv)."""


def source_files() -> Iterator[Path]:
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".yaml") and not NOT_OURS & set(path.relative_to(ROOT).parts):
                yield path
    yield from ROOT.glob("*.md")


def test_pointers_from_code_into_docs_land_on_a_heading() -> None:
    pointers = 0
    for path in source_files():
        for name, anchor in POINTER.findall(path.read_text(encoding="utf-8")):
            assert_lands(DOCS / name, anchor, str(path.relative_to(ROOT)))
            pointers += 1
    assert pointers >= 40


def test_links_between_pages_land() -> None:
    for doc in [*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]:
        for link in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", link):
                continue
            file, _, anchor = link.partition("#")
            assert_lands((doc.parent / file).resolve() if file else doc, anchor, doc.name)


def test_nothing_cites_a_document_outside_the_repository() -> None:
    outside = ("SPEC" + " §", "SPEC" + ".md", "shared/" + "SPEC")
    for path in [*source_files(), *DOCS.glob("*.md")]:
        text = path.read_text(encoding="utf-8")
        assert not any(word in text for word in outside), path.relative_to(ROOT)


def test_readme_and_contributing_link_the_contract() -> None:
    for name in ("README.md", "CONTRIBUTING.md"):
        assert "docs/contract.md" in (ROOT / name).read_text(encoding="utf-8"), name


@pytest.mark.parametrize(
    "page",
    ["README.md", "docs/policies.md", "docs/escalation.md", "docs/webhooks.md", "docs/email.md"],
    ids=str,
)
def test_every_policy_file_example_is_a_valid_policy_file(page: str) -> None:
    """An admin copies these: each ```toml block of the page is read as a whole policy file."""
    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.S)
    assert blocks, f"{page} has no policy file example"
    for block in blocks:
        parse_policies(block, page)  # raises PolicyFileError naming the line and field


def test_the_policy_check_lines_quoted_in_the_docs_are_what_it_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The webhook mistakes docs/webhooks.md and docs/cli.md quote, from a file of one table (the
    first webhook is ``webhooks[0]``), are the lines ``humangate policy check`` prints."""
    monkeypatch.chdir(tmp_path)
    table = '[[webhooks]]\nurl    = "{url}"\nsecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"\n'
    quoted = {
        table.format(url="https://hooks.example.com/humangate") + 'events = ["request.done"]\n': (
            "webhooks.md",
        ),
        table.format(url="http://localhost/hook"): ("webhooks.md", "cli.md"),
    }
    for text, pages in quoted.items():
        Path("humangate.toml").write_text(text)
        assert check_policy_file("humangate.toml") == 1
        (line,) = capsys.readouterr().out.splitlines()
        shown = line.split(";")[0] + "; ..."
        assert f"`{shown}`" in page("webhooks.md")
        field_and_rule = shown.split(": ", 1)[1]  # cli.md writes FILE:LINE for the place
        for name in pages:
            assert field_and_rule in page(name), name


def test_the_readme_lists_each_setting_once() -> None:
    rows = re.findall(r"^\| `(HUMANGATE_\w+)`", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    assert rows and sorted({name for name in rows if rows.count(name) > 1}) == []
