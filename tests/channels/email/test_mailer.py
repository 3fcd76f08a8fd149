"""The SMTP connection against a real SMTP server on loopback (aiosmtpd): plain, STARTTLS and TLS,
with and without a login; one connection kept for many messages and opened again when the server
dropped it; and what each failure means (retried or not), never showing the password."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from channels.email.mailer import Mailer
from schemas.errors import DeliveryError
from schemas.mail import parse_smtp_url
from tests.fakes.smtp import SENDER, Certificate, FakeSmtp, Security, make_certificate

PASSWORD = "s3cret-p@ss/word"


@pytest.fixture
def certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Certificate:
    made = make_certificate(tmp_path / "tls")
    for key, value in made.env().items():
        monkeypatch.setenv(key, value)
    return made


def letter(n: int) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = SENDER, "ops@example.org", f"Letter {n}"
    message.set_content(f"Body {n}")
    return message


@pytest.mark.parametrize(
    ("security", "login"),
    [("none", False), ("none", True), ("starttls", False), ("starttls", True), ("tls", True)],
)
async def test_one_connection_carries_every_message(
    security: Security, login: bool, certificate: Certificate
) -> None:
    with FakeSmtp(
        security=security, login=("hg", PASSWORD) if login else None, certificate=certificate
    ) as fake:
        mailer = Mailer(parse_smtp_url(fake.url()))
        for n in range(3):
            await mailer.send(letter(n), SENDER, ["ops@example.org"])
        await mailer.close()
        received = fake.wait_for(3)
    assert [r.header("Subject") for r in received] == ["Letter 0", "Letter 1", "Letter 2"]
    assert len({r.connection for r in received}) == 1 and mailer.connections == 1
    assert fake.logins == (["hg"] if login else [])


async def test_a_connection_the_server_dropped_is_opened_again_and_the_message_sent_once(
    certificate: Certificate,
) -> None:
    with FakeSmtp() as fake:
        mailer = Mailer(parse_smtp_url(fake.url()))
        await mailer.send(letter(1), SENDER, ["ops@example.org"])
        fake.stop()  # closes the kept connection, as an idle timeout would
        fake.start()
        await mailer.send(letter(2), SENDER, ["ops@example.org"])
        received = fake.wait_for(2)
        await mailer.close()
    assert [r.header("Subject") for r in received] == ["Letter 1", "Letter 2"]
    assert mailer.connections == 2 and len(fake.received) == 2


async def test_a_server_that_is_down_is_retried_later() -> None:
    fake = FakeSmtp()  # never started: the connection is refused
    mailer = Mailer(parse_smtp_url(fake.url()), timeout=5)
    with pytest.raises(DeliveryError) as caught:
        await mailer.send(letter(1), SENDER, ["ops@example.org"])
    assert caught.value.retryable and f"127.0.0.1:{fake.port}" in str(caught.value)


@pytest.mark.parametrize(
    ("reply", "retryable"), [("550 5.1.1 No such user", False), ("451 4.3.0 Busy", True)]
)
async def test_a_refused_recipient_is_retried_only_when_the_refusal_is_temporary(
    reply: str, retryable: bool
) -> None:
    with FakeSmtp(refuse={"nobody@example.org": reply}) as fake:
        mailer = Mailer(parse_smtp_url(fake.url()))
        with pytest.raises(DeliveryError) as caught:
            await mailer.send(letter(1), SENDER, ["nobody@example.org"])
        assert caught.value.retryable is retryable and reply.split()[0] in str(caught.value)
        await mailer.send(letter(2), SENDER, ["ops@example.org"])  # the same connection goes on
        assert [r.header("Subject") for r in fake.wait_for(1)] == ["Letter 2"] and mailer.connections == 1
        await mailer.close()


async def test_a_wrong_password_is_not_retried_and_never_shown(certificate: Certificate) -> None:
    with FakeSmtp(security="starttls", login=("hg", PASSWORD), certificate=certificate) as fake:
        server = parse_smtp_url(fake.url(user="hg", password="not-" + PASSWORD))
        with pytest.raises(DeliveryError) as caught:
            await Mailer(server).send(letter(1), SENDER, ["ops@example.org"])
        assert not caught.value.retryable and "HUMANGATE_SMTP_URL" in str(caught.value)
        assert PASSWORD not in str(caught.value) and PASSWORD not in repr(server)
        with pytest.raises(DeliveryError) as checked:
            await Mailer(server).check()
        assert "refused the login" in str(checked.value)
        await Mailer(parse_smtp_url(fake.url())).check()
        assert fake.received == []  # the check sends nothing


async def test_an_untrusted_certificate_is_not_retried(tmp_path: Path) -> None:
    untrusted = make_certificate(tmp_path / "other")
    with FakeSmtp(security="tls", certificate=untrusted) as fake:
        with pytest.raises(DeliveryError) as caught:
            await Mailer(parse_smtp_url(fake.url())).check()
    assert not caught.value.retryable and "SSL_CERT_FILE" in str(caught.value)


def test_the_url_names_its_mistakes_without_the_password() -> None:
    cases = {
        "http://u:pw-123@host": "smtp:// or smtps://",
        "smtps://u:pw-123@host?starttls=true": "smtps:// is TLS from the start",
        "smtp://u:pw-123@host?tls=1": "unknown option 'tls'",
        "smtp://:pw-123@host": "a password needs a user",
        "smtp://u:pw-123@host:99999": "valid port",
    }
    for url, words in cases.items():
        with pytest.raises(ValueError) as caught:
            parse_smtp_url(url)
        assert words in str(caught.value) and "pw-123" not in str(caught.value), url
    server = parse_smtp_url("smtp://me%40example.org:p%2Fw@mail.example.org:587?starttls=true")
    assert (server.host, server.port, server.security) == ("mail.example.org", 587, "starttls")
    assert (server.username, server.password) == ("me@example.org", "p/w")
    assert server.describe() == "mail.example.org:587 (STARTTLS, as me@example.org)"
    assert parse_smtp_url("smtps://relay").port == 465 and parse_smtp_url("smtp://relay").security == "none"
