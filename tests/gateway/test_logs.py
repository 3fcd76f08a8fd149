"""Form secrets never reach a log line, however the link was mangled on its way."""

from __future__ import annotations

import logging

import httpx
import pytest

from gateway.logs import RedactTokens, redact
from tests.conftest import StartGateway

ID = "0123456789abcdef"
SECRET = "Zq3_xK-9pL2mN8vR4tY6wB1cD5fH7jQ0"


@pytest.mark.parametrize(
    ("line", "logged"),
    [
        (f"GET /f/{ID}.{SECRET} HTTP/1.1", f"GET /f/{ID}.<redacted> HTTP/1.1"),
        (f"GET /f/{ID.upper()}.{SECRET} HTTP/1.1", f"GET /f/{ID.upper()}.<redacted> HTTP/1.1"),
        (f"GET /F/{ID}.{SECRET}?done=1 HTTP/1.1", f"GET /F/{ID}.<redacted>?done=1 HTTP/1.1"),
        (f"/f/{ID}%2E{SECRET}", f"/f/{ID}.<redacted>"),
        (f"/f/{ID}{SECRET}", f"/f/{ID}.<redacted>"),  # the dot was lost
        (f"/f/x{ID}.{SECRET}/more", "/f/.<redacted>"),  # an id mangled beyond recognition
        (f"/f/{ID}.{SECRET[:5]}", f"/f/{ID}.<redacted>"),  # half a secret is still a secret
        (f'"http://host/f/{ID}.{SECRET}#top"', f'"http://host/f/{ID}.<redacted>#top"'),
        (f"/f/{ID}", f"/f/{ID}"),  # an id alone is not secret
        ("GET /auth/callback?code=c0de&state=5tate HTTP/1.1", "GET /auth/callback?<redacted> HTTP/1.1"),
        (
            f"GET /auth/sign-in?next=/f/{ID}.{SECRET} HTTP/1.1",
            f"GET /auth/sign-in?next=/f/{ID}.<redacted> HTTP/1.1",
        ),
    ],
)
def test_whatever_follows_f_loses_everything_past_the_id(line: str, logged: str) -> None:
    assert redact(line) == logged
    assert redact(logged) == logged  # redacting twice (two filters) changes nothing more


def test_a_record_is_redacted_after_formatting_and_with_its_traceback() -> None:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "opened /f/%s.%s", (ID, SECRET), None)
    assert RedactTokens().filter(record)
    assert record.getMessage() == f"opened /f/{ID}.<redacted>"
    try:
        raise ValueError(f"bad link /f/{ID.upper()}.{SECRET}")
    except ValueError as exc:
        failed = logging.LogRecord("t", logging.ERROR, __file__, 1, "failed", (), (type(exc), exc, None))
    RedactTokens().filter(failed)
    assert failed.exc_text is not None and SECRET not in failed.exc_text
    assert "<redacted>" in failed.exc_text


async def test_mangled_form_links_never_put_their_secret_in_the_gateway_log(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        created = await client.post(
            "/v1/requests",
            json={"message": "Logs", "schema": {"type": "object", "properties": {}}, "uiType": "web"},
        )
        token = created.json()["form_url"].rsplit("/", 1)[1]
        hf_id, secret = token.split(".", 1)
        for path in (
            f"/f/{token}",
            f"/f/{hf_id.upper()}.{secret}",
            f"/F/{token}",
            f"/f/{hf_id}%2E{secret}",
            f"/f/{hf_id}{secret}",
            f"/f/{hf_id}.{secret}x",
        ):
            await client.get(path)
            await client.post(path, data={"hg-action": "decline"})
    log = gateway.output()
    assert log.lower().count("/f/") >= 12  # every request was logged (access log), redacted
    assert secret not in log
    assert secret[:8] not in log
