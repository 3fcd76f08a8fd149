"""A real SMTP server on loopback for the email channel: aiosmtpd's ``Controller`` in a thread of the
test process, plain, with STARTTLS or with TLS from the start, with or without AUTH, on a free port.

It keeps every message it accepted (parsed, with the envelope and the client connection it came on)
and can refuse: a recipient with a 5xx or 4xx, or everything while ``stop``-ped (connection refused),
then ``start`` again on the same port. Its TLS certificate is self-signed, made here with
``cryptography``; a client trusts it through ``SSL_CERT_FILE`` (``Certificate.env``). Tests wait on
what it received with ``wait_for`` (a condition variable with a deadline, never a sleep).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
import time
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP as SmtpServer
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gateway.core.embedded import free_port

WAIT = 30.0
"""Seconds a test waits for the server to receive what it expects before failing."""

SENDER = "humangate@example.org"
RECIPIENTS = "ops@example.org, ada@example.org"

Security = Literal["none", "starttls", "tls"]


@dataclass(frozen=True)
class Certificate:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key, as files."""

    cert: Path
    key: Path

    def env(self) -> dict[str, str]:
        """What makes a process trust it (OpenSSL reads ``SSL_CERT_FILE``)."""
        return {"SSL_CERT_FILE": str(self.cert)}

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_certificate(folder: Path) -> Certificate:
    """A new key and a self-signed certificate (its own CA), valid for a day, written in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "humangate test SMTP")])
    now = datetime.datetime.now(datetime.UTC)
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Certificate(cert_path, key_path)


@dataclass(frozen=True)
class Received:
    """One message the server accepted."""

    sender: str
    recipients: list[str]
    message: EmailMessage
    connection: tuple[str, int]
    """The client's address and port: one per SMTP connection."""
    at: float = 0.0
    """When the server accepted it (``time.time()``)."""

    @property
    def text(self) -> str:
        part = self.message.get_body(("plain",))
        assert part is not None
        return str(part.get_content()).replace("\r\n", "\n")

    @property
    def html(self) -> str:
        part = self.message.get_body(("html",))
        assert part is not None
        return str(part.get_content()).replace("\r\n", "\n")

    def header(self, name: str) -> str:
        return str(self.message[name] or "")


@dataclass
class FakeSmtp:
    """The server; ``start`` it (or use it as a context manager) and point a process at ``env``."""

    security: Security = "none"
    login: tuple[str, str] | None = None
    """The one user and password AUTH accepts; ``None``: no AUTH offered or needed."""
    certificate: Certificate | None = None
    port: int = field(default_factory=free_port)
    refuse: dict[str, str] = field(default_factory=dict)
    """Recipient -> the reply RCPT gets (``550 5.1.1 No such user``)."""
    received: list[Received] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    """Users that logged in, one entry per login."""
    _controller: Controller | None = None
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def __enter__(self) -> FakeSmtp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen on ``port`` (the same port again after ``stop``)."""
        kwargs: dict[str, Any] = {}
        if self.security != "none":
            assert self.certificate is not None, "TLS needs a certificate"
            context = self.certificate.server_context()
            if self.security == "tls":
                kwargs["ssl_context"] = context
            else:
                kwargs |= {"tls_context": context, "require_starttls": True}
        if self.login is not None:
            kwargs |= {
                "authenticator": self._authenticate,
                # aiosmtpd knows of STARTTLS only (not of TLS from the start), and warns against
                # requiring AUTH without it: elsewhere AUTH is offered, not required, and a client
                # with a login still logs in, which ``logins`` shows.
                "auth_required": self.security == "starttls",
                "auth_require_tls": self.security == "starttls",
            }
        self._controller = Controller(
            _Handler(self), hostname="127.0.0.1", port=self.port, server_hostname="localhost", **kwargs
        )
        self._controller.start()

    def stop(self) -> None:
        """Stop listening: connections are refused until ``start``."""
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def url(self, *, user: str | None = None, password: str | None = None) -> str:
        """``HUMANGATE_SMTP_URL`` for this server (with its login, unless others are given)."""
        scheme = "smtps" if self.security == "tls" else "smtp"
        who = ""
        if self.login is not None or user is not None:
            name, secret = (user, password) if user is not None else self.login  # type: ignore[misc]
            who = f"{quote(str(name), safe='')}:{quote(str(secret), safe='')}@"
        query = "?starttls=true" if self.security == "starttls" else ""
        return f"{scheme}://{who}127.0.0.1:{self.port}{query}"

    def env(self, *, to: str = RECIPIENTS) -> dict[str, str]:
        """The settings (and the trust) of a process that emails through this server."""
        values = {
            "HUMANGATE_SMTP_URL": self.url(),
            "HUMANGATE_EMAIL_FROM": SENDER,
            "HUMANGATE_EMAIL_TO": to,
        }
        return values | (self.certificate.env() if self.certificate is not None else {})

    def wait_for(self, count: int, timeout: float = WAIT) -> list[Received]:
        """The first ``count`` messages, once they arrived; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"{len(self.received)} of {count} emails arrived in {timeout:.0f} s"
                self._changed.wait(left)
            return list(self.received[:count])

    def thread(self, first: Received) -> list[Received]:
        """``first`` and every message received so far that replies to it."""
        root = first.header("Message-ID")
        return [first] + [r for r in self.received if r.header("In-Reply-To") == root]

    def _authenticate(
        self, server: SmtpServer, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        if isinstance(data, LoginPassword) and self.login is not None:
            user, password = data.login.decode(), data.password.decode()
            if (user, password) == self.login:
                self.logins.append(user)
                return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def _accept(self, envelope: Envelope, session: Session) -> None:
        raw = envelope.original_content or envelope.content
        assert isinstance(raw, bytes)
        message = message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        received = Received(
            str(envelope.mail_from),
            list(envelope.rcpt_tos),
            message,
            tuple(session.peer)[:2],  # type: ignore[arg-type]
            time.time(),
        )
        with self._changed:
            self.received.append(received)
            self._changed.notify_all()


class _Handler:
    def __init__(self, fake: FakeSmtp) -> None:
        self.fake = fake

    async def handle_RCPT(
        self, server: SmtpServer, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        refusal = self.fake.refuse.get(address)
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SmtpServer, session: Session, envelope: Envelope) -> str:
        self.fake._accept(envelope, session)
        return "250 Message accepted for delivery"
