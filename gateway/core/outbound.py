"""Where webhooks may go: only to public (globally routable) addresses, unless
``HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true`` (SECURITY.md: a webhook URL must not turn humangate into a
way to reach the services beside it, SSRF).

Checked twice: when the policy file is checked or a gateway starts (``check_url``, a readable
mistake), and at every send (``GuardedBackend``), against the address actually connected to, since
a name may resolve elsewhere by then (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import typing
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedAddressError(httpx.TransportError):
    """A webhook URL resolves to an address webhooks may not reach."""


def kind_of(address: IPAddress) -> str | None:
    """Why ``address`` is refused (``"loopback"``, ...), or ``None`` when it is a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return kind_of(address.ipv4_mapped)
    for kind in ("loopback", "link_local", "private", "multicast", "unspecified", "reserved"):
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


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, refusing to connect to a refused address: it resolves the host
    itself, connects to a checked address (TLS still verifies the URL's host name) and checks the
    peer of the connection it got."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = [_literal(host)] if _literal(host) else await _resolve(host, port)
        chosen = [a for a in addresses if a is not None]
        reason = refusal(host, chosen)
        if reason is not None:
            raise RefusedAddressError(reason)
        stream = await self._inner.connect_tcp(chosen[0], port, timeout, local_address, socket_options)
        peer = stream.get_extra_info("server_addr")
        reason = refusal(host, [str(peer[0])]) if peer else f"{host}: the connected address is unknown"
        if reason is not None:
            await stream.aclose()
            raise RefusedAddressError(reason)
        return stream

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise RefusedAddressError("webhooks do not go to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _resolve(host: str, port: int) -> list[str | None]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise httpx.ConnectError(f"{host} does not resolve ({exc})") from None
    if not infos:
        raise httpx.ConnectError(f"{host} does not resolve")
    return [str(info[4][0]) for info in infos]


def guarded_transport(allow_private: bool) -> httpx.AsyncHTTPTransport:
    """The transport webhooks are sent through: every address allowed with ``allow_private``, else
    only public ones (``GuardedBackend``)."""
    transport = httpx.AsyncHTTPTransport(retries=0)
    if not allow_private:
        # httpx has no parameter for the network backend; its pool is rebuilt with the same
        # TLS context and ours.
        pool = transport._pool
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=pool._ssl_context,
            max_connections=pool._max_connections,
            max_keepalive_connections=pool._max_keepalive_connections,
            keepalive_expiry=pool._keepalive_expiry,
            http1=pool._http1,
            http2=pool._http2,
            network_backend=GuardedBackend(),
        )
    return transport
