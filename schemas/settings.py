"""All configuration, read once from the environment (``HUMANGATE_`` prefix, platform names as is).

Nothing else in humangate reads ``os.environ``: code asks ``get_settings()``, and tests replace
the cached instance with ``override_settings(...)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from schemas.channel_names import CHANNEL_NAMES as CHANNEL_NAMES  # re-exported: its users import it here
from schemas.mail import ADDRESS, ADDRESS_RULE, SmtpServer, address_mistake, parse_smtp_url
from schemas.setting_rules import (
    API_KEYS,
    DISCORD_ID,
    DISCORD_IDS,
    HOSTS,
    HTTP_URL,
    PROXIES,
    REDIS_URL,
    SLACK_USERS,
    one_line,
)

MIB = 1 << 20
"""Bytes in a mebibyte."""

CommaList = Annotated[list[str], NoDecode]
"""A list setting written in the environment as comma-separated values."""

DEFAULT_WEBHOOK_RETRY_SCHEDULE = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)
"""Seconds between a webhook's attempts: 8 attempts over 27 h 35 min 5 s (docs/webhooks.md#retries)."""


def _env(name: str) -> AliasChoices:
    """Let a setting be read by its platform's own variable name (no ``HUMANGATE_`` prefix)."""
    return AliasChoices(name, name.lower())


def sentinel_address(entry: str) -> tuple[str, int]:
    """(host, port) of one ``HUMANGATE_REDIS_SENTINELS`` entry (``host:port`` or a URL with both);
    ``ValueError`` naming the entry and the rule otherwise."""
    parts = urlsplit(entry if "://" in entry else f"redis://{entry}")
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"{entry!r}: a sentinel URL must start with redis:// or rediss://")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None or not 0 < port < 65536:
        raise ValueError(f"{entry!r}: each sentinel must be host:port, with a port from 1 to 65535")
    return parts.hostname, port


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Hosts an ``http://`` OIDC issuer may have (a provider on this machine); any other needs https.
Likewise the only hosts of an ``http://`` public URL that a Telegram webhook may use (a local Bot
API server on this machine calls http; Telegram itself calls only https)."""

TELEGRAM_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What Telegram accepts as a webhook's ``secret_token``."""


def check_issuer(issuer: str) -> None:
    """Raise ``ValueError`` naming ``HUMANGATE_OIDC_ISSUER`` unless it is an https URL (or http on
    loopback) with no query or fragment."""
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"HUMANGATE_OIDC_ISSUER must be an https:// URL (got {issuer[:80]!r})")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise ValueError(
            "HUMANGATE_OIDC_ISSUER must be an https:// URL; http:// is only accepted for a provider on"
            f" this machine (localhost, 127.0.0.1, ::1), not {parts.hostname}"
        )
    if parts.query or parts.fragment:
        raise ValueError("HUMANGATE_OIDC_ISSUER must be the issuer URL alone, without a query or fragment")


class Settings(BaseSettings):
    """Every tunable of a humangate process; see the README's configuration table."""

    # An empty variable (`SLACK_BOT_TOKEN=` in an env file) means "not set", not "set to nothing".
    model_config = SettingsConfigDict(
        env_prefix="HUMANGATE_",
        extra="ignore",
        populate_by_name=True,
        env_ignore_empty=True,
        # An error must not repeat what was given: HUMANGATE_SMTP_URL may carry a password.
        hide_input_in_errors=True,
    )

    redis_url: Annotated[str, REDIS_URL] | None = None
    """``redis://`` or ``rediss://`` (TLS), with an ACL user and password if any. With sentinels:
    only its scheme, user, password, database and options are used (the sentinels name the host)."""
    redis_sentinels: CommaList = Field(default_factory=list)
    """Redis Sentinel addresses, ``host:port,...`` (each may be a ``redis[s]://user:pass@host:port``
    URL when the sentinels need TLS or an ACL user); set, they name the master humangate uses."""
    redis_sentinel_master: str = "mymaster"
    """The name of the master the sentinels watch (``sentinel monitor <name> ...``)."""
    redis_wait_replicas: int | None = Field(None, ge=0)
    """Replicas that must hold a new request, a person's answer or a delivery attempt before it is
    acknowledged (Redis ``WAIT``); default 1 with sentinels, else 0 (no waiting)."""
    redis_wait_timeout: float = Field(1.0, gt=0)
    """Seconds one ``WAIT`` for replicas may take; past it, the write is acknowledged anyway (logged)."""
    data_dir: Path = Path(".humangate")
    public_url: Annotated[str, HTTP_URL] = "http://127.0.0.1:8000"
    allowed_hosts: Annotated[list[str], NoDecode, HOSTS] = Field(default_factory=list)
    default_channel: str | None = None

    api_keys: Annotated[SecretStr, API_KEYS] | None = None
    require_auth: bool = False
    anonymous_timeout: float = Field(180.0, gt=0)
    authenticated_timeout: float = Field(300.0, gt=0)
    poll_interval: float = Field(5.0, gt=0)
    rate_limit: int = Field(60, gt=0)
    """New requests per minute per API key (docs/callers.md#limits)."""
    anonymous_rate_limit: int | None = Field(None, gt=0)
    """New requests per minute of all anonymous callers of one client address (default: 20, or
    ``rate_limit`` if lower)."""
    max_pending: int = Field(100, gt=0)
    """Pending requests at once per API key (docs/callers.md#limits)."""
    anonymous_max_pending: int | None = Field(None, gt=0)
    """Pending requests at once of all anonymous callers of one client address (default: 10, or
    ``max_pending`` if lower)."""
    max_sessions: int = Field(100, gt=0)
    """Open 2025-11-25 MCP sessions per API key."""
    anonymous_max_sessions: int = Field(20, gt=0)
    """Open 2025-11-25 MCP sessions of all anonymous callers of one client address."""
    max_kept_bytes: int = Field(256 * MIB, gt=0)
    """Bytes of requests and their answers one API key may keep in Redis at once (a request's
    bytes count until its keys expire: its deadline plus a day)."""
    max_kept_bytes_anonymous: int = Field(16 * MIB, gt=0)
    """Bytes of requests and their answers the anonymous callers of one client address may keep in
    Redis at once (until their keys expire: the deadline plus ``anonymous_keep_ended``)."""
    anonymous_keep_ended: float = Field(3600.0, gt=0)
    """Seconds an anonymous caller's request is kept after its deadline (a key's: a day), at least
    ``result_retention``; then late clicks and its form link find nothing."""
    trusted_proxies: Annotated[list[str], NoDecode, PROXIES] = Field(default_factory=lambda: ["127.0.0.1"])
    """Addresses whose ``X-Forwarded-For`` names the real client (reverse proxies in front)."""
    idle_timeout: float = Field(60.0, gt=0)
    """Seconds a ``request_human_input`` request waits for a person to start answering before it is
    canceled; once someone starts (opens the form or a modal), it waits the caller's full timeout."""
    result_retention: float = Field(3600.0, ge=0)
    """Seconds a person's answer that no client has received yet is kept for the next identical call
    (0: never kept; such a call then asks again)."""
    audit_retention: float = Field(90.0, gt=0)
    """Days a request's audit trail is kept after its last event (docs/audit.md)."""
    audit_answers: bool = True
    """Whether a request's ``ended`` event keeps the person's answer values (docs/audit.md)."""
    policy_file: Path | None = None
    """The policy file (docs/policies.md); unset: ``./humangate.toml`` when it exists, else none."""
    webhook_retry_schedule: Annotated[list[float], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
    )
    """Seconds between a webhook's attempts, comma-separated; after the last one it is marked failed."""
    webhook_allow_private: bool = False
    """Let webhooks go to loopback, link-local and private addresses (refused by default: SSRF)."""
    client_elicitation: Literal["race", "off"] = "race"
    """``race``: also ask through the calling MCP client's own form when it declares form elicitation
    (docs/tools.md#the-clients-own-form); ``off``: only the channel asks."""

    max_properties: int = Field(32, gt=0)
    max_options: int = Field(100, gt=0)
    max_schema_bytes: int = Field(64 * 1024, gt=0)
    max_message_bytes: int = Field(32 * 1024, gt=0)
    """Bytes of one message (UTF-8): a diff worth approving is often longer than 8 KiB."""
    message_format: Literal["markdown", "plain"] = "markdown"
    """``markdown``: every text an agent sends a person is rendered natively on each surface
    (docs/rendering.md); ``plain``: shown literally, as written."""

    slack_bot_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=_env("SLACK_APP_TOKEN"))
    """An app-level token (``xapp-...``, scope ``connections:write``): Slack's interactions then
    arrive over Socket Mode connections humangate opens, with no public URL (docs/slack.md)."""
    slack_sockets: int = Field(2, ge=1, le=10)
    """Socket Mode connections the whole installation keeps open (Slack allows 10 per app): each
    held by one process, so losing a process loses no click while another still holds one."""
    slack_channel: str | None = None
    slack_api_url: Annotated[str, HTTP_URL] = "https://slack.com/api/"
    slack_allowed_users: Annotated[list[str], NoDecode, SLACK_USERS] = Field(default_factory=list)

    discord_bot_token: SecretStr | None = Field(None, validation_alias=_env("DISCORD_BOT_TOKEN"))
    discord_application_id: Annotated[str, DISCORD_ID] | None = Field(
        None, validation_alias=_env("DISCORD_APPLICATION_ID")
    )
    discord_public_key: str | None = Field(None, validation_alias=_env("DISCORD_PUBLIC_KEY"))
    discord_channel_id: Annotated[str, DISCORD_ID] | None = None
    discord_api_url: Annotated[str, HTTP_URL] = "https://discord.com/api/v10"
    discord_allowed_users: Annotated[list[str], NoDecode, DISCORD_IDS] = Field(default_factory=list)
    discord_allowed_roles: Annotated[list[str], NoDecode, DISCORD_IDS] = Field(default_factory=list)
    discord_inbound: Literal["http", "gateway"] = "http"
    """How Discord's interactions reach humangate: ``http``, Discord calls ``/discord/interactions``
    (a public URL, signed with ``DISCORD_PUBLIC_KEY``); ``gateway``, over a Gateway connection that
    humangate opens, one per bot token across the installation (no public URL; docs/discord.md)."""

    teams_app_id: str | None = Field(None, validation_alias=_env("TEAMS_APP_ID"))
    teams_app_password: SecretStr | None = Field(None, validation_alias=_env("TEAMS_APP_PASSWORD"))
    teams_tenant_id: str | None = Field(None, validation_alias=_env("TEAMS_TENANT_ID"))
    teams_conversation: str | None = None
    teams_service_url: Annotated[str, HTTP_URL] = "https://smba.trafficmanager.net/teams/"
    teams_openid_url: Annotated[str, HTTP_URL] = (
        "https://login.botframework.com/v1/.well-known/openidconfiguration"
    )
    teams_token_url: Annotated[str, HTTP_URL] | None = None
    teams_allowed_users: CommaList = Field(default_factory=list)

    smtp_url: SecretStr | None = None
    """The SMTP server emails are sent through: ``smtp://[user:password@]host[:port]``
    (``?starttls=true`` to upgrade) or ``smtps://...`` (TLS from the start); docs/email.md."""
    email_from: str | None = None
    """The address emails are sent from."""
    email_to: str | None = None
    """Where a request is emailed when its policy names no ``targets.email``: addresses,
    comma-separated."""

    telegram_bot_token: SecretStr | None = Field(None, validation_alias=_env("TELEGRAM_BOT_TOKEN"))
    """The bot's token from BotFather (``123456:ABC...``); it travels in every Bot API URL's path."""
    telegram_chat_id: str | None = None
    """Where requests are posted: a group, supergroup or private chat id (``-1001234567890``), or
    a channel's ``@name``."""
    telegram_api_url: Annotated[str, HTTP_URL] = "https://api.telegram.org"
    """The Bot API base (tests and proxies point it elsewhere)."""
    telegram_webhook_secret: SecretStr | None = None
    """Set: updates come to ``POST /telegram/updates`` with this secret in
    ``X-Telegram-Bot-Api-Secret-Token`` (registered with ``setWebhook``); unset: long polling."""

    oidc_issuer: str | None = None
    """The organisation's OpenID Connect provider (its issuer URL; discovery is read from
    ``<issuer>/.well-known/openid-configuration``), for signing in to the web form (docs/sign-in.md)."""
    oidc_client_id: str | None = None
    """humangate's client id at that provider."""
    oidc_client_secret: SecretStr | None = None
    """humangate's client secret at that provider."""
    web_sign_in: Literal["optional", "required"] = "optional"
    """``required``: every web form asks the person to sign in first (needs the three OIDC settings)."""

    @field_validator("*", mode="before")
    @classmethod
    def _one_line(cls, value: object) -> object:
        return one_line(value)

    @field_validator(
        "allowed_hosts",
        "trusted_proxies",
        "slack_allowed_users",
        "discord_allowed_users",
        "discord_allowed_roles",
        "teams_allowed_users",
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("redis_sentinels", mode="before")
    @classmethod
    def _split_sentinels(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list):
            for entry in value:
                sentinel_address(str(entry))
        return value

    @field_validator("webhook_retry_schedule", mode="before")
    @classmethod
    def _split_schedule(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                value = [float(part) for part in value.split(",") if part.strip()]
            except ValueError:
                raise ValueError(
                    "must be seconds between attempts, comma-separated (like 5,300,1800)"
                ) from None
        if isinstance(value, list):
            if not value or any(not isinstance(v, int | float) or not v > 0 for v in value):
                raise ValueError("must be one or more positive numbers of seconds, comma-separated")
        return value

    @field_validator("default_channel")
    @classmethod
    def _known_channel(cls, value: str | None) -> str | None:
        if value is not None and value not in CHANNEL_NAMES:
            raise ValueError(f"must be one of {', '.join(CHANNEL_NAMES)}")
        return value

    @model_validator(mode="after")
    def _one_request_fits_the_kept_budget(self) -> Settings:
        # A request's document may escape each byte of its message and schema into two (quotes).
        largest = 2 * (self.max_schema_bytes + self.max_message_bytes) + 4096
        for name in ("max_kept_bytes", "max_kept_bytes_anonymous"):
            if getattr(self, name) < largest:
                raise ValueError(
                    f"HUMANGATE_{name.upper()} must be at least {largest} bytes, so that one request of"
                    " the largest size (HUMANGATE_MAX_SCHEMA_BYTES, HUMANGATE_MAX_MESSAGE_BYTES) fits"
                )
        return self

    @field_validator("smtp_url")
    @classmethod
    def _smtp_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_smtp_url(value.get_secret_value())
        return value

    @field_validator("email_from")
    @classmethod
    def _email_from(cls, value: str | None) -> str | None:
        if value is not None and not ADDRESS.fullmatch(value.strip()):
            raise ValueError(f"HUMANGATE_EMAIL_FROM must be {ADDRESS_RULE}")
        return None if value is None else value.strip()

    @field_validator("email_to")
    @classmethod
    def _email_to(cls, value: str | None) -> str | None:
        mistake = None if value is None else address_mistake(value)
        if mistake is not None:
            raise ValueError(f"HUMANGATE_EMAIL_TO: {mistake}")
        return value

    @model_validator(mode="after")
    def _telegram_webhook_reachable(self) -> Settings:
        secret = self.telegram_webhook_secret
        if secret is None:
            return self
        if not TELEGRAM_SECRET.fullmatch(secret.get_secret_value()):
            raise ValueError(
                "HUMANGATE_TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z, a-z, 0-9, '_' and"
                " '-' (what Telegram accepts as a webhook's secret_token)"
            )
        parts = urlsplit(self.public_url)
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS):
            raise ValueError(
                "HUMANGATE_TELEGRAM_WEBHOOK_SECRET is set, so Telegram must reach"
                " HUMANGATE_PUBLIC_URL/telegram/updates, and Telegram only calls https:// URLs: set"
                " HUMANGATE_PUBLIC_URL to this gateway's public https:// address"
                f" (got {self.public_url[:80]!r}),"
                " or unset the secret to use long polling, which needs no public URL"
            )
        return self

    @model_validator(mode="after")
    def _oidc_all_or_none(self) -> Settings:
        names = ("oidc_issuer", "oidc_client_id", "oidc_client_secret")
        missing = [f"HUMANGATE_{name.upper()}" for name in names if not getattr(self, name)]
        if missing and len(missing) < len(names):
            raise ValueError(
                f"{', '.join(missing)} must be set too: web sign-in needs all three OIDC settings"
            )
        if self.web_sign_in == "required" and missing:
            raise ValueError(
                "HUMANGATE_WEB_SIGN_IN=required needs HUMANGATE_OIDC_ISSUER, HUMANGATE_OIDC_CLIENT_ID"
                " and HUMANGATE_OIDC_CLIENT_SECRET (the provider people sign in with)"
            )
        if self.oidc_issuer is not None:
            check_issuer(self.oidc_issuer)
        return self

    @property
    def oidc_enabled(self) -> bool:
        """Whether web sign-in is configured (all three OIDC settings are set)."""
        return bool(self.oidc_issuer and self.oidc_client_id and self.oidc_client_secret)

    @property
    def smtp_server(self) -> SmtpServer | None:
        """The server ``HUMANGATE_SMTP_URL`` names (checked when the settings were read)."""
        return None if self.smtp_url is None else parse_smtp_url(self.smtp_url.get_secret_value())

    @property
    def external_redis(self) -> bool:
        """Whether a Redis is configured (a URL or sentinels); else ``serve`` embeds one."""
        return bool(self.redis_url or self.redis_sentinels)

    @property
    def wait_replicas(self) -> int:
        """``redis_wait_replicas``, defaulting to 1 with sentinels and 0 without."""
        if self.redis_wait_replicas is not None:
            return self.redis_wait_replicas
        return 1 if self.redis_sentinels else 0

    @property
    def public_base(self) -> str:
        """``public_url`` without a trailing slash, for building links."""
        return self.public_url.rstrip("/")

    @property
    def public_host(self) -> str:
        return urlsplit(self.public_url).netloc

    @property
    def teams_token_endpoint(self) -> str:
        """``HUMANGATE_TEAMS_TOKEN_URL``, else Microsoft Entra's token endpoint of ``TEAMS_TENANT_ID``."""
        if self.teams_token_url:
            return self.teams_token_url
        tenant = self.teams_tenant_id or "botframework.com"
        return f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"


_current: Settings | None = None


def get_settings() -> Settings:
    """The process's settings, read from the environment on first use and cached."""
    global _current
    if _current is None:
        _current = Settings()
    return _current


def override_settings(settings: Settings | None) -> None:
    """Replace the cached settings (tests); ``None`` re-reads the environment on next use."""
    global _current
    _current = settings
