"""The email channel: each request is emailed once, and answered on its web form.

Email only tells. The request goes out as one message (``channels.email.letter``: plain text and
HTML) to ``HUMANGATE_EMAIL_TO``, or to its policy's ``targets.email``: recipients come only from
the settings and the policy file, never from the agent. Its one link opens the request's web form
(``/f/{token}``), where the answer is given: a GET shows the form and never answers (mail scanners
open links), and a request with approvers asks for sign-in there (``email:<address>``). Replies are
not read, and the email says so.

One thread per request: the first message's ``Message-ID`` is its post's reference, and reminders,
escalation steps' posts aside (each its own thread, to its own recipients), and the outcome are
replies (``In-Reply-To``, ``References``, ``Re:`` and the same subject). ``update`` sends the
outcome, so the jobs call it only once the request ended, once per post (``Channel.edits``).

An SMTP server cannot be asked whether it took a message, so a delivery retried after an
uncertain failure sends again; ``channels.email.mailer`` says which failures are retried.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.email.letter import Letter, outcome_letter, reminder_letter, render_letter
from channels.email.mailer import Mailer
from schemas.errors import DeliveryError, InvalidAnswerError, NotConfiguredError
from schemas.mail import split_addresses
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings

logger = logging.getLogger(__name__)


class EmailClient:
    """What ``EmailChannel.connect`` yields: the process's ``Mailer`` and who mail comes from and goes to."""

    def __init__(self, settings: Settings) -> None:
        server = settings.smtp_server
        if server is None or not settings.email_from:
            raise NotConfiguredError(
                "email is not configured (set HUMANGATE_SMTP_URL and HUMANGATE_EMAIL_FROM)"
            )
        self.mailer = Mailer(server)
        self.sender = settings.email_from
        self.recipients = settings.email_to or ""
        self.domain = self.sender.rsplit("@", 1)[1]
        self.public_base = settings.public_base

    def form_url(self, hf: HumanFunction) -> str:
        """``hf``'s web form (``/f/{token}``, as the web channel serves it), for a reminder, which is
        rendered without a ``RenderContext``. A capability: never log it."""
        return f"{self.public_base}/f/{hf.form_token}"

    def message_id(self, hf: HumanFunction) -> str:
        """A new ``Message-ID`` for a post of ``hf``, unique to this post."""
        return f"<hg.{hf.id}.{secrets.token_hex(6)}@{self.domain}>"

    def compose(self, letter: Letter, to: list[str], message_id: str, reply_to: str | None) -> EmailMessage:
        """``letter`` as a message with its headers; a reply names the thread's first message."""
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = ", ".join(to)
        message["Subject"] = letter.subject
        message["Date"] = formatdate(usegmt=True)
        message["Message-ID"] = message_id
        if reply_to is not None:
            message["In-Reply-To"] = reply_to
            message["References"] = reply_to
        # Sent by a program (RFC 3834): out-of-office replies and the like are not sent back.
        message["Auto-Submitted"] = "auto-generated"
        message["X-Auto-Response-Suppress"] = "All"
        message.set_content(letter.text)
        message.add_alternative(letter.html, subtype="html")
        return message

    async def reply(self, hf: HumanFunction, letter: Letter) -> None:
        """Send ``letter`` as a reply in the thread of the post ``hf.refs`` names."""
        first, to = str(hf.refs["message_id"]), split_addresses(str(hf.refs["to"]))
        message = self.compose(letter, to, self.message_id(hf), first)
        await self.mailer.send(message, self.sender, to)


class EmailChannel:
    """Email through SMTP (aiosmtplib), answered on the web form."""

    name = "email"
    title = "Email"
    posts = True
    edits = False
    client_modules: tuple[str, ...] = ()
    target_setting: str | None = "email_to"

    def missing_settings(self, settings: Settings) -> list[str]:
        wanted = {
            "HUMANGATE_SMTP_URL": settings.smtp_url is not None,
            "HUMANGATE_EMAIL_FROM": settings.email_from,
            "HUMANGATE_EMAIL_TO": settings.email_to,
        }
        return [name for name, value in wanted.items() if not value]

    def endpoints(self) -> list[Endpoint]:
        return []  # answered on the web form's endpoints

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        raise NotImplementedError("email receives nothing: its requests are answered on the web form")

    def render(self, hf: HumanFunction, ctx: RenderContext) -> Letter:
        return render_letter(hf, ctx.form_url, ctx.now)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        raise InvalidAnswerError({"": "email reads no answers: the request is answered on its web form"})

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return None  # replies are not read: no one is vouched for by email

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        raise NotImplementedError("email receives nothing: its requests are answered on the web form")

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[EmailClient]:
        client = EmailClient(settings)
        try:
            yield client
        finally:
            await client.mailer.close()

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        email: EmailClient = client
        if hf.delivery_attempts > 1:
            # An SMTP server cannot be asked whether it took an earlier attempt.
            logger.info("emailing again after a failed attempt hf=%s channel=email", hf.id)
        to = split_addresses(hf.target or email.recipients)  # a policy's target replaces the default
        if not to:
            raise DeliveryError(
                "no recipients: set HUMANGATE_EMAIL_TO or the policy's targets.email", retryable=False
            )
        letter = render_letter(hf, ctx.form_url, ctx.now)
        message_id = email.message_id(hf)
        await email.mailer.send(email.compose(letter, to, message_id, None), email.sender, to)
        return {"message_id": message_id, "subject": letter.subject, "to": ", ".join(to)}

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        return None  # nobody can look into the recipients' mailboxes

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        email: EmailClient = client
        if not hf.refs.get("message_id") or not hf.is_pending:
            return
        await email.reply(hf, reminder_letter(hf, text, email.form_url(hf), time.time()))

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        email: EmailClient = client
        if hf.is_pending or not hf.refs.get("message_id"):
            return  # nothing is sent while it waits but reminders and steps
        try:
            await email.reply(hf, outcome_letter(hf))
        except DeliveryError as exc:
            if exc.retryable:
                raise
            logger.warning("cannot send the outcome hf=%s channel=email: %s", hf.id, exc)

    def openings(self, settings: Settings) -> list[Opening]:
        """None: email only tells; answers are given on the web form."""
        return []

    async def check(self, settings: Settings) -> list[str]:
        missing = self.missing_settings(settings)
        if missing:
            return [f"set {', '.join(missing)}"]
        client = EmailClient(settings)
        try:
            await client.mailer.check()
        except DeliveryError as exc:
            return [str(exc)]
        return []
