"""``humangate doctor``: is Redis reachable, which channels are configured, what is missing, how
each platform reaches humangate (its endpoints, or connections humangate opens, and who holds each),
and whether every target of the policy file can be posted to.

What can be told without the network is (``gateway.doctor_offline``). A platform's odd answer (a
missing field, an HTML error page, no answer) is one failed check saying what came, never a crash;
the platforms' SDKs log nothing into the report."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from channels.base import Channel
from channels.registry import CHANNELS, configured_channels
from gateway.configuration import half_configured
from gateway.core import redis_check
from gateway.core.lease import holders
from gateway.core.local import running_embedded_url
from gateway.core.policies import policy_path, read_policies
from gateway.core.redis_client import async_redis, sync_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.topology import read_topology, topology_lines
from gateway.core.webhooks import url_mistakes
from gateway.doctor_offline import offline_problems
from schemas.policies import Policies, PolicyFileError
from schemas.settings import CHANNEL_NAMES, Settings, get_settings

CHECK_TIMEOUT = 30.0
"""Seconds one platform check may take in all (its client's own timeouts and retries included)."""

ANSWER_CHARS = 200
"""Characters of an unexpected answer a failed check quotes."""


def _say(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
    sys.stdout.write(f"[{mark}] {text}\n")


def _redis_target(settings: Settings) -> RedisTarget | None:
    """The Redis humangate uses (``None``: embedded, and no ``serve`` running to have started it)."""
    if settings.external_redis:
        return RedisTarget.of(settings)
    url = running_embedded_url(settings.data_dir)
    return RedisTarget(url) if url is not None else None


def _check_redis(settings: Settings) -> bool:
    target = _redis_target(settings)
    data = settings.data_dir.resolve()
    if target is None:
        _say(
            None,
            "Redis: HUMANGATE_REDIS_URL is not set; `humangate serve` will start an embedded Redis, "
            f"its data kept in {data} (HUMANGATE_DATA_DIR)",
        )
        return True
    if not settings.external_redis:
        _say(None, f"Redis: the embedded Redis of the running humangate serve, its data kept in {data}")
    where = target.describe()
    try:
        with sync_redis(target) as client:
            client.ping()
            version = client.info("server").get("redis_version", "?")
            problem, warning = redis_check.check(client)
            topology = read_topology(client, target)
    except redis.RedisError as exc:
        _say(False, f"Redis: cannot reach {where}: {exc}")
        return False
    if problem:
        _say(False, f"Redis at {where}: {problem}")
        return False
    _say(True, f"Redis {version} reachable at {where}")
    if warning:
        _say(None, f"Redis: warning: {warning}")
    healthy = True
    for ok, line in topology_lines(topology, target, settings.wait_replicas):
        _say(ok, line)
        healthy = healthy and ok is not False
    return healthy


def _received(exc: BaseException) -> str:
    """What an unexpected answer was, in one line: the error it caused and its words."""
    words = " ".join(str(exc).split())[:ANSWER_CHARS] or "no details"
    return f"{type(exc).__name__}: {words}"


async def platform_check(channel: Channel, settings: Settings) -> list[str]:
    """``channel.check``, never raising: an unexpected answer or none within ``CHECK_TIMEOUT`` is
    one problem saying what was received."""
    try:
        return await asyncio.wait_for(channel.check(settings), CHECK_TIMEOUT)
    except TimeoutError:
        return [f"{channel.title} did not answer within {CHECK_TIMEOUT:g} s (nothing received)"]
    except Exception as exc:
        return [f"unexpected answer from {channel.title} ({_received(exc)})"]


async def _check_channels(settings: Settings) -> bool:
    healthy = True
    halves = half_configured(settings)
    for name in CHANNEL_NAMES:
        channel = CHANNELS.get(name)
        if channel is None:
            _say(None, f"{name}: not available in this version")
            continue
        if name in halves:
            _say(False, f"{name}: half configured: {halves[name]}")
            healthy = False
            continue
        missing = channel.missing_settings(settings)
        if missing:
            _say(None, f"{name}: not configured (set {', '.join(missing)})")
            continue
        problems = offline_problems(name, settings) or await platform_check(channel, settings)
        for problem in problems:
            _say(False, f"{name}: {problem}")
        if problems:
            healthy = False
        else:
            _say(True, f"{name}: configured and working")
    return healthy


async def _check_policies(settings: Settings) -> bool:
    """The policy file is valid, and each target (of a channel, or of an escalation step) is on a
    configured channel that can post there (each channel's own check, run with the target in place
    of its configured default)."""
    path = policy_path(settings)
    if path is None:
        _say(None, "policies: no policy file (requests go where their caller asks)")
        return True
    try:
        policies = read_policies(path)
    except PolicyFileError as exc:
        for mistake in exc.mistakes:
            _say(False, f"policies: {path}: {mistake}")
        return False
    _say(True, f"policies: {path}: {', '.join(policies.names) or 'no policies'}")
    configured = configured_channels(settings)
    healthy = True
    checked: dict[tuple[str, str], list[str]] = {}
    for policy in policies.policies:
        for allowed in policy.channels or ():
            if allowed not in configured:
                _say(None, f"policy {policy.name}: allows {allowed}, which is not configured")
        emails = [name for name in policy.approvers if name.startswith("email:")]
        if emails and not settings.oidc_enabled:
            _say(
                None,
                f"policy {policy.name}: approvers {', '.join(emails)} can answer only after signing in to "
                "the web, and web sign-in is not configured (set HUMANGATE_OIDC_ISSUER, "
                "HUMANGATE_OIDC_CLIENT_ID, HUMANGATE_OIDC_CLIENT_SECRET)",
            )
        for index, step in enumerate(policy.steps):
            if step.channel not in configured:
                _say(
                    False,
                    f"policy {policy.name}: steps[{index}] posts on {step.channel}, which is not configured",
                )
                healthy = False
        places = [(f"targets.{channel}", channel, target) for channel, target in policy.targets.items()]
        places += [
            (f"steps[{i}].target", step.channel, step.target)
            for i, step in enumerate(policy.steps)
            if step.target is not None and step.channel in configured
        ]
        for field, channel, target in places:
            where = f"policy {policy.name}: {field} = {target}"
            platform = CHANNELS[channel]
            if channel not in configured or platform.target_setting is None:
                missing = ", ".join(platform.missing_settings(settings))
                _say(False, f"{where}: {channel} is not configured (set {missing})")
                healthy = False
                continue
            if (channel, target) not in checked:
                with_target = settings.model_copy(update={platform.target_setting: target})
                checked[channel, target] = await platform_check(platform, with_target)
            for problem in checked[channel, target]:
                _say(False, f"{where}: {problem}")
            if checked[channel, target]:
                healthy = False
            else:
                _say(True, f"{where}: reachable")
    return _check_webhooks(policies, settings) and healthy


def _check_webhooks(policies: Policies, settings: Settings) -> bool:
    """Each webhook URL resolves to addresses a webhook may reach (docs/webhooks.md#private-addresses);
    nothing is sent to it."""
    refused, warnings = url_mistakes(policies, settings)
    reasons = dict(refused)
    for index, hook in enumerate(policies.webhooks):
        where = f"webhooks[{index}]: {hook.url}"
        if index in reasons:
            _say(False, f"{where}: {reasons[index]}")
        else:
            _say(True, f"{where}: allowed")
    for warning in warnings:
        _say(None, warning)
    return not refused


async def _show_connections(settings: Settings) -> None:
    """Each configured platform's inbound mode; for connections humangate opens itself, who holds
    each (host, pid) and its last activity, or that nobody does (then clicks get the platform's error)."""
    target = _redis_target(settings)
    for name in CHANNEL_NAMES:
        channel = CHANNELS.get(name)
        if channel is None or channel.missing_settings(settings):
            continue
        openings = channel.openings(settings)
        if not openings:
            paths = [endpoint.path for endpoint in channel.endpoints() if endpoint.signed]
            if paths:
                _say(None, f"{name}: http ({channel.title} calls {', '.join(paths)} at HUMANGATE_PUBLIC_URL)")
            continue
        for opening in openings:
            _say(None, f"{name}: {opening.mode} ({opening.slots} connection{'s' * (opening.slots > 1)})")
            if target is None:
                _say(None, f"{name}: no Redis to read the connections' holders from")
                continue
            client = async_redis(target)
            try:
                held = await holders(client, opening.platform, opening.slots)
            except redis.RedisError as exc:
                _say(False, f"{name}: cannot read who holds the connections: {exc}")
                continue
            finally:
                await client.aclose()
            now = time.time()
            for slot, holder in held.items():
                if holder is None:
                    _say(None, f"{slot}: not held (no serve or worker process holds it now)")
                    continue
                _say(
                    True,
                    f"{slot}: held by {holder.host} pid {holder.pid} for {now - holder.since:.0f} s, "
                    f"last activity {max(0.0, now - holder.activity):.0f} s ago",
                )


async def _check_all(settings: Settings) -> bool:
    channels_ok = await _check_channels(settings)
    await _show_connections(settings)
    return await _check_policies(settings) and channels_ok


@contextmanager
def _quiet() -> Iterator[None]:
    """No log line or warning of ours or of a platform SDK (retries, HTTP requests) while checking:
    the report says everything in its own lines."""
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def run() -> int:
    """Print one line per check; exit 1 when something configured is broken."""
    settings = get_settings()
    with _quiet():
        ok = _check_redis(settings)
        ok = asyncio.run(_check_all(settings)) and ok
    return 0 if ok else 1
