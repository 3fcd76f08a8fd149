"""The gateway and the workers reach a platform only through the channel registry: no module of
``gateway/`` or ``workers/`` imports a platform package (``channels.slack``, ``channels.discord``,
``channels.teams``, ``channels.web``), read from the source with ``ast`` so a lazy import counts too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLATFORM_PACKAGES = (
    "channels.slack",
    "channels.discord",
    "channels.teams",
    "channels.web",
    "channels.email",
)
"""The packages of the platforms registered today; a new one would be added here with its line."""


def imported_modules(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, at any depth (``from channels import slack`` is ``channels.slack``)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def is_platform(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in PLATFORM_PACKAGES)


def test_the_gateway_and_the_workers_import_no_platform_package() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted({m for m in imported_modules(path) if is_platform(m)})
        for folder in ("gateway", "workers")
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}


def test_the_scan_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "import channels.slack.api\nfrom channels import web\nfrom channels.registry import CHANNELS\n"
        "def late():\n    from channels.teams.inbound import messages\n"
    )
    assert sorted(m for m in imported_modules(source) if is_platform(m)) == [
        "channels.slack.api",
        "channels.teams.inbound",
        "channels.teams.inbound.messages",
        "channels.web",
    ]


ENTRY_POINT = "gateway/cli.py"
"""The program's entry point: the one module of ``gateway/`` that composes the gateway and the workers
(``serve``'s embedded worker, the ``worker`` command)."""


def test_only_the_entry_point_of_the_gateway_imports_the_workers() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted({m for m in imported_modules(path) if is_workers(m)})
        for path in sorted((ROOT / "gateway").rglob("*.py"))
        if str(path.relative_to(ROOT)) != ENTRY_POINT
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}
    assert any(is_workers(module) for module in imported_modules(ROOT / ENTRY_POINT))


def test_channels_and_schemas_import_neither_the_gateway_nor_the_workers() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            {m for m in imported_modules(path) if is_workers(m) or m.split(".")[0] == "gateway"}
        )
        for folder in ("channels", "schemas")
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}


def is_workers(module: str) -> bool:
    return module == "workers" or module.startswith("workers.")


PACKAGES = ("gateway", "workers", "channels", "schemas")
"""humangate's own packages, whose modules are checked for import circles."""


def module_files() -> dict[str, Path]:
    """Every module of ``PACKAGES`` by dotted name (a package by its ``__init__.py``)."""
    files = {}
    for folder in PACKAGES:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (Tarjan's strongly connected
    components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                found.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_in_a_circle() -> None:
    files = module_files()
    graph = {
        module: {m for m in imported_modules(path) if m in files and m != module}
        for module, path in files.items()
    }
    assert circles(graph) == []


def test_a_circle_is_found_through_a_lazy_import_too() -> None:
    graph = {"a.channel": {"a.form"}, "a.form": {"a.channel", "a.page"}, "a.page": set()}
    assert circles(graph) == [["a.channel", "a.form"]]
