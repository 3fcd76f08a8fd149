"""The files in ``deploy/`` run commands and name settings that exist."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import build_parser
from gateway.core.metrics import (
    ESCALATIONS,
    REFUSED_ANSWERS,
    REGISTRY,
    TIME_TO_ANSWER,
    WEBHOOK_DELIVERIES,
    SharedCollector,
)
from gateway.core.queue import JOB_TIMEOUT
from schemas.settings import Settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SETTING = re.compile(r"^#?\s*([A-Z][A-Z0-9_]+)=", re.MULTILINE)


def known_variables() -> set[str]:
    """Every environment variable ``Settings`` reads."""
    names = set()
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", None)
        names |= {a for a in aliases if isinstance(a, str) and a.isupper()} if aliases else set()
        names.add(f"HUMANGATE_{name.upper()}")
    return names


def assert_valid_command(argv: list[str]) -> None:
    assert argv[0].endswith("humangate"), argv
    build_parser().parse_args(argv[1:])  # exits (fails the test) on an unknown command or flag


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def test_compose_runs_real_commands_with_real_settings() -> None:
    services = compose()["services"]
    assert {"redis", "gateway", "worker"} <= set(services)
    for name in ("gateway", "worker"):
        service = services[name]
        assert_valid_command(service["command"])
        assert set(service["environment"]) <= known_variables()
        assert service["environment"]["HUMANGATE_REDIS_URL"].startswith("redis://redis:")
        assert (DEPLOY / service["build"]["dockerfile"].removeprefix("deploy/")).exists()
        assert (DEPLOY / f"{service['env_file']}.example").exists()
    assert "--no-worker" in services["gateway"]["command"]
    # A stopping worker is given longer than a job may take to finish the one in hand.
    assert services["worker"]["stop_signal"] == "SIGTERM"
    assert int(services["worker"]["stop_grace_period"].removesuffix("s")) > JOB_TIMEOUT
    assert "noeviction" in services["redis"]["command"]


def test_the_env_example_names_only_real_settings() -> None:
    named = SETTING.findall((DEPLOY / "humangate.env.example").read_text())
    assert named and set(named) <= known_variables(), set(named) - known_variables()


def test_the_dockerfile_command_and_health_check_are_real() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    command = re.search(r"^CMD (\[.*\])$", text, re.MULTILINE)
    assert command is not None
    assert_valid_command(json.loads(command.group(1)))
    assert "/readyz" in text
    for package in ("schemas", "channels", "workers", "gateway"):
        assert f"COPY {package} ./{package}" in text


@pytest.mark.parametrize("unit", ["humangate.service", "humangate-worker@.service"])
def test_systemd_units_run_real_commands(unit: str) -> None:
    text = (DEPLOY / "systemd" / unit).read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.MULTILINE)
    assert exec_start is not None
    assert_valid_command(shlex.split(exec_start.group(1).replace("%i", "slack,web")))
    assert "EnvironmentFile=" in text
    assert "KillSignal=SIGTERM" in text
    stop = re.search(r"^TimeoutStopSec=(\d+)$", text, re.MULTILINE)
    assert stop is not None
    if unit.startswith("humangate-worker"):
        assert "KillMode=mixed" in text and int(stop.group(1)) > JOB_TIMEOUT


def test_the_teams_app_package_is_valid_and_names_real_settings() -> None:
    folder = DEPLOY / "teams"
    text = (folder / "manifest.json").read_text()
    manifest = json.loads(text)
    placeholders = set(re.findall(r"\{\{([A-Z_]+)\}\}", text))
    assert placeholders == {"TEAMS_APP_ID", "HUMANGATE_PUBLIC_URL"} <= known_variables()
    assert manifest["manifestVersion"] == "1.17" and manifest["id"] == "{{TEAMS_APP_ID}}"
    (bot,) = manifest["bots"]
    assert bot["botId"] == "{{TEAMS_APP_ID}}" and not bot["isNotificationOnly"]
    assert {"team", "groupChat"} <= set(bot["scopes"])
    assert len(manifest["name"]["short"]) <= 30 and len(manifest["description"]["short"]) <= 80
    assert len(manifest["description"]["full"]) <= 4000
    for name, size in (("color", 192), ("outline", 32)):
        png = (folder / manifest["icons"][name]).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert (width, height) == (size, size)
        assert png[25] == 6  # RGBA: the outline is white on transparent


def exported_series() -> set[str]:
    """Every series name ``/metrics`` can show: this process's metrics and the shared ones."""
    shared = SharedCollector({}, {})
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix
        for family in [*REGISTRY.collect(), *shared.collect()]
        for suffix in suffixes[family.type]
    }


def test_the_grafana_dashboard_is_json_and_queries_only_metrics_we_export() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "humangate.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    queried = {name for expr in exprs for name in re.findall(r"\bhumangate_[a-z_]+", expr)}
    assert queried <= exported_series(), queried - exported_series()
    shown = {re.sub(r"_(bucket|sum|count)$", "", name) for name in queried}
    assert {TIME_TO_ANSWER, ESCALATIONS, REFUSED_ANSWERS, WEBHOOK_DELIVERIES} <= shown
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
