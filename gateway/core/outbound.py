"""Where webhooks may go: only to public (globally routable) addresses, unless
``HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true`` (SECURITY.md: a webhook URL must not turn humangate into a
way to reach the services beside it, SSRF).

Checked twice: when the policy file is checked or a gateway starts (``check_url``, a readable
mistake), and at every send (``GuardedResolver``, ``refused_literal``), against the address actually
connected to, since a name may resolve elsewhere by then (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedAddressError(OSError):
    """A webhook URL resolves to an address webhooks may not reach."""


def kind_of(address: IPAddress) -> str | None:
    """Why ``address`` is refused (``"loopback"``, ...), or ``None`` when it is a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return kind_of(address.ipv4_mapped)
    for kind in ("loopback", "link_local", "unspecified", "multicast", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-global"


def refusal(host: str, addresses: Iterable[str]) -> str | None:
    """The reason to refuse a host resolving to ``addresses`` (any refused one refuses it)."""
    for text in addresses:
        kind = kind_of(ipaddress.ip_address(text.split("%", 1)[0]))
        if kind is not None:
            where = f"{host} is" if host.strip("[]") == text else f"{host} resolves to {text},"
            return (
                f"{where} a {kind} address; webhooks go only to public addresses "
                "(HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)"
            )
    return None


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


def check_url(url: str) -> tuple[str | None, str | None]:
    """(why the URL is refused, a warning), resolving its host now (blocking: for the CLI and
    ``serve`` before its loop starts). A host that does not resolve is a warning only: it is
    checked again at every send."""
    host = urlsplit(url).hostname or ""
    literal = _literal(host)
    if literal is not None:
        return refusal(host, [literal]), None
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        return None, f"{host} does not resolve now ({exc}); it is checked again at every send"
    return refusal(host, [str(info[4][0]) for info in infos]), None


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing a host that resolves to a refused address. aiohttp connects
    only to the addresses its resolver returned (no second lookup), so the address connected to is
    one checked here; an IP literal needs no resolver and is checked by ``refused_literal``."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        reason = refusal(host, [result["host"] for result in found])
        if reason is not None:
            raise RefusedAddressError(reason)
        return found

    async def close(self) -> None:
        await self._inner.close()


def refused_literal(url: str) -> str | None:
    """Why a URL whose host is an IP address is refused (``None``: a name, or a public address)."""
    literal = _literal(urlsplit(url).hostname or "")
    return refusal(literal, [literal]) if literal is not None else None


def webhook_session(allow_private: bool, connections: int, timeout: float) -> aiohttp.ClientSession:
    """The HTTP session webhooks are sent with: up to ``connections`` at once, ``timeout`` seconds
    per attempt, no proxy from the environment, and, unless ``allow_private``, only public addresses."""
    connector = aiohttp.TCPConnector(
        limit=connections, resolver=None if allow_private else GuardedResolver(), enable_cleanup_closed=False
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=timeout),
        trust_env=False,
        auto_decompress=False,
    )
