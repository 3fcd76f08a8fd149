"""The email channel in one process: a real gateway app, the worker's jobs in a thread, a real SMTP
server on loopback. What the letters say (and escape), that opening the link answers nothing, that
the outcome is sent once however many jobs ask, that recipients come only from the settings and the
policy, and what ``doctor`` and the settings and policy checks say."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from channels.email.letter import deadline_words, outcome_letter, request_letter, subject_of
from channels.registry import CHANNELS
from gateway.core.callers import ANONYMOUS_CALLER
from schemas.models import Action, Answer, HumanFunction, Outcome, Status
from schemas.policies import PolicyFileError, parse_policies
from schemas.settings import Settings, override_settings
from tests.channels.inprocess import serving, work
from tests.conftest import run_cli
from tests.fakes.smtp import FakeSmtp

SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve <it>?"},
        "colour": {"type": "string", "enum": ["b", "g"], "enumNames": ["Blue", "Green & <Gold>"]},
        "note": {"type": "string", "maxLength": 80, "description": "Why, in <em>short</em>"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["approved"],
}


def email_settings(settings: Settings, smtp: FakeSmtp, **more: object) -> Settings:
    env = smtp.env()
    configured = settings.model_copy(
        update={
            "smtp_url": Settings(smtp_url=env["HUMANGATE_SMTP_URL"], _env_file=None).smtp_url,
            "email_from": env["HUMANGATE_EMAIL_FROM"],
            "email_to": env["HUMANGATE_EMAIL_TO"],
            **more,
        }
    )
    override_settings(configured)
    return configured


def request(**update: object) -> HumanFunction:
    hf = HumanFunction(
        id="ab12cd34",
        requester="deploy-bot",
        channel="email",
        message='Ship <b>v2</b> & "more"?\n<script>x()</script>',
        request_schema=SCHEMA,
        created_at=1_800_000_000.0,
        deadline=1_800_000_900.0,
        form_secret="s" * 32,
    )
    return hf.model_copy(update=update)


def test_the_request_letter_says_everything_and_escapes_the_agent() -> None:
    letter = request_letter(request(), "https://hg.example.org/f/ab12cd34.sss", 1_800_000_000.0)
    assert letter.subject == 'Input needed: Ship <b>v2</b> & "more"?'
    assert "deploy-bot asks:" in letter.text and "<script>x()</script>" in letter.text
    assert "- Approve <it>?: yes or no (required)" in letter.text
    assert "- colour: one of: Blue, Green & <Gold> (optional)" in letter.text
    assert "- note: text, at most 80 characters (optional). Why, in <em>short</em>" in letter.text
    assert "- count: a whole number between 1 and 5 (optional)" in letter.text
    assert "Anyone who has this email may answer." in letter.text
    assert "Answer by Friday 15 January 2027, 08:15 UTC (in 15 minutes)." in letter.text
    assert "Replies to this email are not read" in letter.text and "does not answer" in letter.text
    html = letter.html
    assert "<script" not in html and "&lt;script&gt;x()&lt;/script&gt;" in html
    assert "Ship &lt;b&gt;v2&lt;/b&gt; &amp; &quot;more&quot;?" in html and "Green &amp; &lt;Gold&gt;" in html
    assert "<style" not in html and "Open the form to answer" in html
    assert html.count('href="https://hg.example.org/f/ab12cd34.sss"') == 2


def test_with_approvers_the_letter_says_who_and_that_the_form_asks_to_sign_in() -> None:
    letter = request_letter(request(approvers=["email:ada@example.org"]), "https://x/f/t", 1_800_000_000.0)
    assert "Only email:ada@example.org may answer. The form asks you to sign in first." in letter.text


def test_the_outcome_letter_has_no_link_and_says_nothing_more_comes() -> None:
    content = {"approved": True, "colour": "g"}
    outcome = Outcome(
        status=Status.ACCEPTED, action=Action.ACCEPT, content=content, by="Ada", via="web", at=1e9
    )
    letter = outcome_letter(request(status=Status.ACCEPTED, outcome=outcome))
    assert letter.subject == "Re: " + subject_of(request())
    assert letter.text.startswith("Approved by Ada, 2001-09-09 01:46:40 UTC.")
    assert "- colour: Green & <Gold>" in letter.text and "Green &amp; &lt;Gold&gt;" in letter.html
    assert "/f/" not in letter.text and "Nothing more will be sent" in letter.text


def test_the_deadline_is_in_words_and_a_subject_is_one_line() -> None:
    assert (
        deadline_words(1_800_000_900.0, 1_800_000_810.0)
        == "Friday 15 January 2027, 08:15 UTC (in 90 seconds)"
    )
    assert deadline_words(1_800_000_900.0, 1_800_000_900.0).endswith("(passed)")
    long = request(message="\n\n  " + "word " * 40 + "\nsecond line")
    subject = subject_of(long)
    assert "\n" not in subject and len(subject) == len("Input needed: ") + 80 and subject.endswith("\u2026")


async def test_opening_the_link_answers_nothing_and_the_outcome_is_sent_once(
    settings: Settings, smtp: FakeSmtp
) -> None:
    configured = email_settings(settings, smtp)
    async with serving(configured) as (runtime, client):
        hf, _ = await runtime.service.open(ANONYMOUS_CALLER, "email", "Deploy?", SCHEMA)
        await asyncio.to_thread(work, configured, "email")
        (first,) = smtp.wait_for(1)
        path = f"/f/{hf.form_token}"
        for _ in range(3):  # a mail scanner, a preview, the person
            page = await client.get(path)
            assert page.status_code == 200
        assert (await runtime.store.get(hf.id)).is_pending

        answer = Answer(action=Action.DECLINE, reason="Not now", by="Bo", via="web")
        await runtime.service.answer(await runtime.store.get(hf.id), answer)
        await asyncio.to_thread(work, configured, "email")
        # Every further ask (a retried or repeated update job, the reaper's) sends nothing more.
        ended = await runtime.store.get(hf.id)
        await runtime.service.queue_updates([(hf.id, "email")])
        await asyncio.to_thread(work, configured, "email")
        assert ended.status is Status.DECLINED
        replies = [r for r in smtp.received if r.header("In-Reply-To") == first.header("Message-ID")]
        assert len(replies) == 1 and "Declined by Bo: Not now" in replies[0].text
        assert len(smtp.received) == 2


async def test_a_policy_target_replaces_the_default_recipients(settings: Settings, smtp: FakeSmtp) -> None:
    configured = email_settings(settings, smtp)
    async with serving(configured) as (runtime, _):
        runtime.service.policies = parse_policies(
            '[policies.mail]\n[policies.mail.targets]\nemail = "cfo@example.org,  lead@example.org"\n'
        )
        await runtime.service.open(ANONYMOUS_CALLER, "email", "Spend?", SCHEMA)
        await asyncio.to_thread(work, configured, "email")
        (sent,) = smtp.wait_for(1)
    assert sent.recipients == ["cfo@example.org", "lead@example.org"]
    assert sent.header("To") == "cfo@example.org, lead@example.org"


def test_the_settings_refuse_bad_addresses_and_urls_without_repeating_them() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(smtp_url="smtp://me:hunter2-secret@relay:99999", _env_file=None)
    assert "HUMANGATE_SMTP_URL" in str(caught.value) and "hunter2-secret" not in str(caught.value)
    with pytest.raises(ValidationError, match="'not-an-address' is not a plain email address"):
        Settings(email_to="ops@example.org, not-an-address", _env_file=None)
    with pytest.raises(ValidationError, match="HUMANGATE_EMAIL_FROM must be a plain email address"):
        Settings(email_from="Humangate <hg@example.org>", _env_file=None)
    configured = Settings(smtp_url="smtp://me:hunter2-secret@relay", _env_file=None)
    assert "hunter2-secret" not in repr(configured) and "hunter2-secret" not in repr(configured.smtp_server)
    assert CHANNELS["email"].missing_settings(configured) == ["HUMANGATE_EMAIL_FROM", "HUMANGATE_EMAIL_TO"]


@pytest.mark.parametrize(
    ("table", "rule"),
    [
        ('[policies.p.targets]\nemail = "cfo@example.org, @nope"', "'@nope' is not a plain email address"),
        ('[policies.p.targets]\nemail = "a@example.org, A@example.org"', "'A@example.org' is listed twice"),
        (
            '[[policies.p.steps]]\nafter = 0\nchannel = "slack"\n[[policies.p.steps]]\nafter = 5\n'
            'channel = "email"\nmention = ["email:ada@example.org"]',
            "cannot be mentioned on email (an email notifies its recipients",
        ),
        (
            '[[policies.p.steps]]\nafter = 0\nchannel = "slack"\n[[policies.p.steps]]\nafter = 5\n'
            'channel = "email"\ntarget = "ops"',
            "target: 'ops' is not a plain email address",
        ),
    ],
)
def test_policy_check_names_email_mistakes(table: str, rule: str) -> None:
    with pytest.raises(PolicyFileError) as caught:
        parse_policies(f"[policies.p]\n{table}\n")
    assert rule in str(caught.value)


def test_an_email_step_and_target_are_accepted() -> None:
    policies = parse_policies(
        '[policies.p]\nchannels = ["slack", "email"]\n[policies.p.targets]\nemail = "a@example.org"\n'
        '[[policies.p.steps]]\nafter = 0\nchannel = "slack"\n'
        '[[policies.p.steps]]\nafter = 60\nchannel = "email"\ntarget = "b@example.org, c@example.org"\n'
    )
    (policy,) = policies.policies
    assert policy.targets.of("email") == "a@example.org" and policy.steps[1].channel == "email"
    assert json.loads(json.dumps(policy.describe())).endswith("steps slack at 0 s, email at 60 s")


def test_doctor_logs_in_sends_nothing_and_names_a_refused_login(tmp_path: Path) -> None:
    with FakeSmtp(login=("hg", "right-password")) as smtp:
        env = smtp.env() | {"HUMANGATE_DATA_DIR": str(tmp_path)}
        healthy = run_cli("doctor", env=env)
        assert "[ok  ] email: configured and working" in healthy.stdout, healthy.stdout + healthy.stderr
        assert smtp.logins == ["hg"]
        wrong = env | {"HUMANGATE_SMTP_URL": smtp.url(user="hg", password="wrong-password")}
        refused = run_cli("doctor", env=wrong)
        assert refused.returncode == 1
        assert "[FAIL] email: the SMTP server" in refused.stdout and "refused the login" in refused.stdout
        assert "wrong-password" not in refused.stdout + refused.stderr
        assert smtp.received == []
