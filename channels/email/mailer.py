"""The one SMTP connection a process sends email through (aiosmtplib), and what its failures mean.

``Mailer`` opens the connection on first use (TLS or STARTTLS and the login as
``HUMANGATE_SMTP_URL`` says) and keeps it for the next messages: a worker sending a thousand
requests opens it once. A kept connection the server closed meanwhile (servers drop idle clients)
fails at its first command, before anything was sent; the message then goes out on a new
connection at once. Every command has a timeout.

Failures become ``DeliveryError``: retryable when the server could not be reached or answered 4xx
(try later), not retryable when it refused for good (5xx: an unknown recipient, a sender it will not
relay for, a refused login), which a person must fix. No message ever carries the password.
"""

from __future__ import annotations

import asyncio
import email.policy
import logging
import socket
import ssl
from email.message import EmailMessage

import aiosmtplib

from schemas.errors import DeliveryError
from schemas.mail import SmtpServer

logger = logging.getLogger(__name__)

WIRE = email.policy.SMTP.clone(max_line_length=998)
"""How a message is written for SMTP: CRLF, and headers folded only past RFC 5322's hard limit (at
78 characters Python folds a subject with quotes or brackets before its first word, which clients
then show with a leading space)."""

SMTP_TIMEOUT = 15.0
"""Seconds connecting, the TLS handshake, or one SMTP command may take."""


class Mailer:
    """One SMTP connection, opened on first use, kept across messages and opened again after a
    failure; messages are sent one at a time on it."""

    def __init__(self, server: SmtpServer, *, timeout: float = SMTP_TIMEOUT) -> None:
        self.server = server
        self.timeout = timeout
        self.connections = 0
        """Connections opened so far (the benchmark and the tests read it)."""
        self._smtp: aiosmtplib.SMTP | None = None
        self._lock = asyncio.Lock()
        self._local_name: str | None = None

    async def send(self, message: EmailMessage, sender: str, recipients: list[str]) -> None:
        """Send ``message`` from ``sender`` to ``recipients``; raises ``DeliveryError``."""
        raw = message.as_bytes(policy=WIRE)
        async with self._lock:
            reused = self._smtp is not None and self._smtp.is_connected
            try:
                smtp = await self._connected()
                refused, _ = await smtp.sendmail(sender, recipients, raw)
            except aiosmtplib.SMTPServerDisconnected as exc:
                self._drop()
                if not reused:
                    raise self.error(exc, "send the email") from exc
                # A kept connection the server closed while idle: nothing was sent on it.
                try:
                    smtp = await self._connected()
                    refused, _ = await smtp.sendmail(sender, recipients, raw)
                except (aiosmtplib.SMTPException, OSError) as exc:
                    self._drop()
                    raise self.error(exc, "send the email") from exc
            except (aiosmtplib.SMTPException, OSError) as exc:
                if not isinstance(exc, aiosmtplib.SMTPResponseException | aiosmtplib.SMTPRecipientsRefused):
                    self._drop()  # the connection is in an unknown state
                else:
                    await self._reset()
                raise self.error(exc, "send the email") from exc
        if refused:
            logger.warning(
                "the SMTP server refused %d of %d recipients channel=email: %s",
                len(refused),
                len(recipients),
                "; ".join(f"{response.code} {response.message}"[:200] for response in refused.values()),
            )

    async def check(self) -> None:
        """Connect, start TLS and log in as the URL says, ask ``NOOP``, and leave: no mail is sent.
        Raises ``DeliveryError`` saying what failed."""
        smtp = self._client()
        try:
            await smtp.connect()
            await smtp.noop()
        except (aiosmtplib.SMTPException, OSError) as exc:
            raise self.error(exc, "sign in") from exc
        finally:
            if smtp.is_connected:
                try:
                    await smtp.quit()
                except (aiosmtplib.SMTPException, OSError):
                    smtp.close()

    async def close(self) -> None:
        """Say goodbye to the server (``QUIT``) if a connection is open."""
        async with self._lock:
            smtp, self._smtp = self._smtp, None
            if smtp is not None and smtp.is_connected:
                try:
                    await smtp.quit()
                except (aiosmtplib.SMTPException, OSError):
                    smtp.close()

    @property
    def where(self) -> str:
        return self.server.describe()

    def error(self, exc: BaseException, what: str) -> DeliveryError:
        """The ``DeliveryError`` of a failure to ``what``: retryable unless the server refused for good."""
        if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
            codes = [refusal.code for refusal in exc.recipients]
            said = "; ".join(f"{r.code} {r.message}"[:200] for r in exc.recipients)
            return DeliveryError(
                f"the SMTP server {self.where} refused every recipient ({said})",
                retryable=any(400 <= code < 500 for code in codes),
            )
        if isinstance(exc, aiosmtplib.SMTPAuthenticationError):
            return DeliveryError(
                f"the SMTP server {self.where} refused the login ({exc.code} {exc.message[:200]}): check "
                "the user and password in HUMANGATE_SMTP_URL",
                retryable=400 <= exc.code < 500,
            )
        if isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code >= 400:
            return DeliveryError(
                f"the SMTP server {self.where} answered {exc.code} {exc.message[:200]} when asked to {what}",
                retryable=exc.code < 500,
            )
        if isinstance(exc, ssl.SSLCertVerificationError) or isinstance(
            exc.__cause__, ssl.SSLCertVerificationError
        ):
            return DeliveryError(
                f"the SMTP server {self.where} has a certificate this machine does not trust "
                "(a private CA: point SSL_CERT_FILE at its certificate)",
                retryable=False,
            )
        unreachable = (
            aiosmtplib.SMTPConnectError,
            aiosmtplib.SMTPTimeoutError,
            aiosmtplib.SMTPServerDisconnected,
        )
        if isinstance(exc, aiosmtplib.SMTPException) and not isinstance(exc, unreachable):
            # No STARTTLS or AUTH where the URL asks for them, and the like: a person must fix it.
            return DeliveryError(
                f"the SMTP server {self.where} cannot {what} as HUMANGATE_SMTP_URL asks: {str(exc)[:200]}",
                retryable=False,
            )
        return DeliveryError(
            f"cannot reach the SMTP server {self.where} to {what} ({type(exc).__name__}: {str(exc)[:200]})",
            retryable=True,
        )

    def _client(self) -> aiosmtplib.SMTP:
        server = self.server
        return aiosmtplib.SMTP(
            hostname=server.host,
            port=server.port,
            username=server.username,
            password=server.password,
            use_tls=server.security == "tls",
            start_tls=server.security == "starttls",
            timeout=self.timeout,
            local_hostname=self._local_name,
        )

    async def _connected(self) -> aiosmtplib.SMTP:
        if self._smtp is not None and self._smtp.is_connected:
            return self._smtp
        if self._local_name is None:
            # Looked up once, off the event loop (``getfqdn`` may ask DNS).
            self._local_name = await asyncio.to_thread(socket.getfqdn)
        smtp = self._client()
        await smtp.connect()
        self.connections += 1
        logger.info("connected to the SMTP server %s channel=email", self.where)
        self._smtp = smtp
        return smtp

    async def _reset(self) -> None:
        """After a refusal: ``RSET``, so the kept connection starts its next message clean."""
        if self._smtp is None or not self._smtp.is_connected:
            return
        try:
            await self._smtp.rset()
        except (aiosmtplib.SMTPException, OSError):
            self._drop()

    def _drop(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            smtp.close()
