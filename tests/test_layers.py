"""The gateway and the workers reach a platform only through the channel registry: no module of
``gateway/`` or ``workers/`` imports a platform package (``channels.slack``, ``channels.discord``,
``channels.teams``, ``channels.web``), read from the source with ``ast`` so a lazy import counts too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLATFORM_PACKAGES = ("channels.slack", "channels.discord", "channels.teams", "channels.web")
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
