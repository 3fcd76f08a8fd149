"""The ``humangate`` command: serve, worker, keys, policy, webhooks, doctor, audit.

The program's entry point (``[project.scripts]`` and ``python -m gateway.cli``), and the one module
that composes the gateway and the workers: ``serve`` gets the embedded worker from here and
``worker`` is run from here, so no other module of ``gateway/`` imports ``workers/``
(tests/test_layers.py). The command line is built from the standard library alone and each command
imports what it uses when it runs, so ``humangate --help`` answers at once (tests/test_startup.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.logs import configure_logging
from schemas.channel_names import CHANNEL_NAMES

if TYPE_CHECKING:
    from gateway.core.redis_target import RedisTarget
    from gateway.serve import Stoppable

logger = logging.getLogger(__name__)


class Parser(argparse.ArgumentParser):
    """argparse's parser, saying a mistake on the command line in one line (docs/cli.md)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``humangate`` (also used to check the commands in ``deploy/``)."""
    parser = Parser(prog="humangate", description="A multi-channel human-functions gateway.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the gateway (MCP at /mcp, web forms, webhooks)",
        description=(
            "Run the gateway: MCP at /mcp, web forms, platform webhooks, REST at /v1 and the inbox. "
            "Without HUMANGATE_REDIS_URL it starts an embedded Redis (data under HUMANGATE_DATA_DIR) "
            "and a worker in this process."
        ),
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 for every interface)",
    )
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on (default: 8000)")
    serve.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="gateway processes serving on the port, sharing one Redis (default: 1)",
    )
    serve.add_argument(
        "--worker",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run an RQ worker in this process (default: only with the embedded Redis)",
    )

    worker = commands.add_parser("worker", help="run RQ workers that deliver requests to channels")
    worker.add_argument("--channels", default=None, help=f"comma-separated, of {','.join(CHANNEL_NAMES)}")
    worker.add_argument("--burst", action="store_true", help="quit when the queues are empty")

    keys = commands.add_parser("keys", help="manage API keys (stored hashed in Redis)")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a key and print it once")
    create.add_argument("name")
    create.add_argument(
        "--operator", action="store_true", help="an operator key: it may also sign in to the inbox at /inbox"
    )
    key_commands.add_parser("list", help="list key names (never the keys)")
    revoke = key_commands.add_parser("revoke", help="revoke every key with this name")
    revoke.add_argument("name")

    policy = commands.add_parser("policy", help="work with the policy file (docs/policies.md)")
    policy_commands = policy.add_subparsers(dest="policy_command", required=True)
    check = policy_commands.add_parser(
        "check", help="check a policy file: print each mistake with its line and field (exit 1 on any)"
    )
    check.add_argument(
        "file",
        nargs="?",
        default=None,
        help="the file to check (default: HUMANGATE_POLICY_FILE, else ./humangate.toml)",
    )

    webhooks = commands.add_parser("webhooks", help="webhook deliveries that failed (docs/webhooks.md)")
    webhook_commands = webhooks.add_subparsers(dest="webhooks_command", required=True)
    webhook_commands.add_parser("failed", help="list failed (and gone) deliveries, oldest first")
    redrive = webhook_commands.add_parser(
        "redrive", help="send failed deliveries again, with the same id and body, on a fresh schedule"
    )
    redrive.add_argument("id", nargs="*", metavar="ID", help="delivery ids, as `webhooks failed` lists them")
    redrive.add_argument("--all", action="store_true", help="every failed delivery")

    commands.add_parser("doctor", help="check Redis, every configured channel and the policies' targets")

    audit = commands.add_parser("audit", help="read the requests' audit trails (docs/audit.md)")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    export = audit_commands.add_parser(
        "export", help="print every event of a time range, oldest first per request"
    )
    export.add_argument(
        "--since", default=None, help="ISO 8601 time of the first event (default: the oldest)"
    )
    export.add_argument("--until", default=None, help="ISO 8601 time of the last event (default: now)")
    export.add_argument(
        "--format", choices=("jsonl", "csv"), default="jsonl", help="JSON lines or CSV (default: jsonl)"
    )
    return parser


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (a whole number from 1 to 65535)")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    from gateway.configuration import SettingsMistakes, checked_settings, read_settings

    try:
        # serve and worker run the channels, so a half-configured one stops them (doctor reports it).
        checked_settings() if args.command in ("serve", "worker") else read_settings()
    except SettingsMistakes as exc:
        for line in exc.lines:
            sys.stderr.write(f"humangate: {line}\n")
        return 2
    if args.command == "serve":
        from gateway.serve import serve as run_serve

        return run_serve(args.host, args.port, args.worker, args.workers, start_worker=start_worker)
    if args.command == "worker":
        from workers.cli import run_workers

        return run_workers(args.channels, burst=args.burst)
    if args.command == "keys":
        return _keys(args)
    if args.command == "policy":
        return check_policy_file(args.file)
    if args.command == "webhooks":
        from gateway.webhook_commands import run as run_webhooks

        return run_webhooks(args.webhooks_command, getattr(args, "id", []), getattr(args, "all", False))
    if args.command == "audit":
        from gateway.export import run_export

        return run_export(args.since, args.until, args.format)
    from gateway import doctor

    return doctor.run()


def start_worker(target: RedisTarget, channels: list[str]) -> Stoppable:
    """The worker ``serve`` runs in its own process (a thread), on the queues of ``channels``."""
    from workers.rq_worker import start_worker_thread

    return start_worker_thread(target, channels)


def check_policy_file(file: str | None) -> int:
    """``humangate policy check [FILE]``: each mistake as ``FILE:LINE: field: rule`` (exit 1), or
    a summary of the valid file (exit 0); warnings on stderr, ``FILE:LINE: warning: field: rule``."""
    from gateway.core.callers import env_keys
    from gateway.core.local import running_embedded_url
    from gateway.core.policies import DEFAULT_POLICY_FILE, check_file, policy_path, stored_key_names
    from gateway.core.redis_target import RedisTarget
    from schemas.settings import get_settings

    settings = get_settings()
    path = Path(file) if file is not None else policy_path(settings)
    if path is None:
        sys.stdout.write(
            f"no policy file: HUMANGATE_POLICY_FILE is not set and ./{DEFAULT_POLICY_FILE} does not exist, "
            "so requests go where their caller asks, and anyone there may answer\n"
        )
        return 0
    checked = check_file(path, settings)
    warnings = list(checked.warnings)
    if checked.names_operators():
        url = None if settings.external_redis else running_embedded_url(settings.data_dir)
        target = RedisTarget.of(settings) if settings.external_redis else (RedisTarget(url) if url else None)
        names = stored_key_names(target) if target is not None else None
        if names is not None:
            operators, callers = names
            warnings += checked.operator_warnings(operators, callers | set(env_keys(settings).values()))
        else:
            where = "no Redis found" if target is None else f"Redis ({target.describe()}) does not answer"
            sys.stderr.write(
                f"{path}: note: operator: approvers not checked against the operator keys ({where})\n"
            )
    for mistake in checked.mistakes:
        sys.stdout.write(mistake.at(str(path)) + "\n")
    if checked.mistakes:
        sys.stderr.write(f"{path}: {len(checked.mistakes)} mistake(s)\n")
    else:
        policies = checked.policies
        count = len(policies.policies)
        sys.stdout.write(f"{path}: valid, {count} {'policy' if count == 1 else 'policies'}\n")
        for policy in policies.policies:
            sys.stdout.write(f"  {policy.describe()}\n")
        for hook in policies.webhooks:
            sys.stdout.write(f"  {hook.describe()}\n")
    for warning in warnings:
        sys.stderr.write(warning.at(str(path), "warning: ") + "\n")
    return 1 if checked.mistakes else 0


def _keys(args: argparse.Namespace) -> int:
    import asyncio

    from gateway.core.callers import KeyRing
    from gateway.core.local import NoLocalRedis, local_redis
    from gateway.core.redis_client import async_redis
    from schemas.errors import InvalidRequestError
    from schemas.settings import get_settings, override_settings

    async def act(target: RedisTarget) -> int:
        async with async_redis(target) as redis:
            ring = KeyRing(redis, get_settings())
            if args.keys_command == "create":
                try:
                    key = await ring.create(args.name, operator=args.operator)
                except InvalidRequestError as exc:
                    sys.stderr.write(f"humangate keys create: {exc}\n")
                    return 2
                sys.stdout.write(f"{key}\n")
                sys.stderr.write("Store this key now: it is shown only once.\n")
            elif args.keys_command == "list":
                rows = await ring.list()
                for row in rows:
                    role = "operator" if row["operator"] else "caller"
                    sys.stdout.write(f"{row['name']}\t{row['fingerprint']}\t{role}\n")
                if not rows:
                    sys.stderr.write("no stored keys (keys from HUMANGATE_API_KEYS are not listed)\n")
            else:
                removed = await ring.revoke(args.name)
                sys.stdout.write(f"revoked {removed} key(s) named {args.name}\n")
                if not removed:
                    return 1
            return 0

    try:
        with local_redis() as (target, which):
            sys.stderr.write(f"humangate keys: using {which}\n")
            if not get_settings().external_redis:
                override_settings(get_settings().model_copy(update={"redis_url": target.url}))
            return asyncio.run(act(target))
    except NoLocalRedis as exc:
        sys.stderr.write(f"humangate keys: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
