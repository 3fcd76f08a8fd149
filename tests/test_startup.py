"""What a process imports before it can answer (issue 26: every command took about four seconds, mostly
imports): ``humangate --help`` imports none of the gateway, the workers, the channels or their SDKs,
and no process pays for the IRI grammar jsonschema would build. Asserted on the modules a real
``python -m gateway.cli`` process has imported, never on seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "channels",
    "workers",
    "gateway.app",
    "gateway.core",
    "gateway.serve",
    "gateway.doctor",
    "schemas.settings",
    "pydantic",
    "jsonschema",
    "rfc3987_syntax",
    "lark",
    "redis",
    "rq",
    "uvicorn",
    "fastapi",
    "starlette",
    "mcp",
    "slack_bolt",
    "slack_sdk",
    "discord",
    "microsoft_teams",
    "authlib",
    "prometheus_client",
    "aiohttp",
    "httpx",
)
"""Packages and modules ``--help`` must not import (a name stands for it and everything under it)."""

REPORT = """
import atexit, json, runpy, sys

def report():
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    sys.__stderr__.write("MODULES " + json.dumps(loaded) + "\\n")

atexit.register(report)
sys.argv = ["humangate", *sys.argv[1:]]
runpy.run_module("gateway.cli", run_name="__main__")
"""
"""Runs ``python -m gateway.cli ARGS`` and, as the process exits, prints every module it imported."""


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The finished ``python -m gateway.cli ARGS`` process and the modules it had imported."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT, *args],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("HUMANGATE_")}
        | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return done, set(json.loads(line.removeprefix("MODULES ")))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in HEAVY))


def test_help_imports_only_the_command_line() -> None:
    done, modules = imported_by("--help")
    assert done.returncode == 0, done.stderr
    assert "usage: humangate" in done.stdout
    assert "gateway.logs" in modules  # the scan saw the real command (its one import of ours)
    assert heavy(modules) == []


def test_a_command_help_imports_only_the_command_line_too() -> None:
    done, modules = imported_by("worker", "--help")
    assert done.returncode == 0, done.stderr
    assert "slack,discord,teams,web" in done.stdout
    assert heavy(modules) == []


def test_the_scan_sees_a_heavy_import() -> None:
    _, modules = imported_by("policy", "check", "/nonexistent/humangate.toml")
    assert "schemas.settings" in heavy(modules)  # the same scan does see what a command imports


def test_no_command_imports_the_packages_of_formats_flat_schemas_never_allow() -> None:
    _, modules = imported_by("policy", "check", "/nonexistent/humangate.toml")
    assert "jsonschema" in modules  # the policy check reads schemas, with jsonschema
    assert not {"rfc3987_syntax", "lark", "isoduration", "arrow"} & modules
    assert "microsoft_teams" not in {m.split(".")[0] for m in modules}  # imported where Teams is used
