"""What each kind of form link gets (real gateway): tampered 403, expired 410, gone or malformed 404,
answered 200 / 409; every page with the form pages' headers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import redis

from gateway.core import redis_keys as keys
from tests.conftest import StartGateway

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
ACCEPT = {"hg-action": "accept", "f.approved": "true"}
WAIT = 30.0


async def open_request(client: httpx.AsyncClient) -> dict[str, Any]:
    created = await client.post(
        "/v1/requests", json={"message": "Link?", "schema": APPROVAL, "uiType": "web"}
    )
    assert created.status_code == 201
    body: dict[str, Any] = created.json()
    return body


def assert_page(response: httpx.Response, status: int, heading: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert f"<h1>{heading}</h1>" in response.text


async def test_a_tampered_link_is_403_and_changes_nothing(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf = await open_request(client)
        real = hf["form_url"].rsplit("/", 1)[1]
        secret = real.split(".", 1)[1]
        for wrong in (
            f"{hf['id']}.{'A' * len(secret)}",  # another secret
            f"{hf['id']}.{secret[:-1]}",  # cut short
            f"{hf['id']}.{secret[:-1]}{'B' if secret[-1] != 'B' else 'C'}",  # one character changed
        ):
            assert_page(await client.get(f"/f/{wrong}"), 403, "This link is not valid.")
            assert_page(await client.post(f"/f/{wrong}", data=ACCEPT), 403, "This link is not valid.")
        assert (await client.get(f"/v1/requests/{hf['id']}")).json()["status"] == "pending"
    log = gateway.output()
    assert f"refused a form link with a wrong secret hf={hf['id']} channel=web" in log
    assert secret[:-1] not in log


async def test_malformed_and_unknown_links_are_404(start_gateway: StartGateway, redis_url: str) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf = await open_request(client)
        token = hf["form_url"].rsplit("/", 1)[1]
        hf_id, secret = token.split(".", 1)
        malformed = [hf_id, f"{hf_id}.", f".{secret}", f"{hf_id.upper()}.{secret}", "%3Cscript%3E", "x" * 300]
        unknown = [f"{'0' * 16}.{secret}"]
        for bad in malformed + unknown:
            assert_page(await client.get(f"/f/{bad}"), 404, "This link is not valid or has expired.")
            assert_page(
                await client.post(f"/f/{bad}", data=ACCEPT), 404, "This link is not valid or has expired."
            )
        # A request whose keys are gone (a day after it ended) is unknown too: Redis keeps no trace.
        with redis.Redis.from_url(redis_url) as sync:
            assert sync.delete(keys.human_function(hf_id)) == 1
        assert_page(await client.get(f"/f/{token}"), 404, "This link is not valid or has expired.")
        assert_page(
            await client.post(f"/f/{token}", data=ACCEPT), 404, "This link is not valid or has expired."
        )


async def test_an_expired_link_is_410_for_get_and_post(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="1", HUMANGATE_POLL_INTERVAL="0.2")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf = await open_request(client)
        async with asyncio.timeout(WAIT):
            while (await client.get(f"/v1/requests/{hf['id']}")).json()["status"] != "expired":
                await asyncio.sleep(0.1)  # polling a condition, bounded by the timeout
        assert_page(await client.get(hf["form_url"]), 410, "Expired")
        late = await client.post(hf["form_url"], data=ACCEPT)
        assert_page(late, 410, "Expired")
        assert "This request expired at" in late.text
        assert (await client.get(f"/v1/requests/{hf['id']}")).json()["status"] == "expired"


async def test_a_link_past_its_deadline_is_410_before_the_reaper_ends_it(start_gateway: StartGateway) -> None:
    # The reaper runs every 60 s here, so the request is still pending when the link is opened.
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="1", HUMANGATE_POLL_INTERVAL="60")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf = await open_request(client)
        async with asyncio.timeout(WAIT):
            while time.time() <= hf["deadline"]:
                await asyncio.sleep(0.05)  # waiting for the clock to pass the deadline, bounded
        assert_page(await client.get(hf["form_url"]), 410, "Expired")
        assert_page(await client.post(hf["form_url"], data=ACCEPT), 410, "Expired")
        assert (await client.get(f"/v1/requests/{hf['id']}")).json()["result"] is None


async def test_an_answered_link_shows_its_outcome_and_refuses_a_late_answer(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf = await open_request(client)
        assert (await client.post(hf["form_url"], data=ACCEPT)).status_code == 303
        assert_page(await client.get(hf["form_url"]), 200, "Answered")
        late = await client.post(hf["form_url"], data={"hg-action": "decline"})
        assert_page(late, 409, "Answered")
        assert "Already answered by web form" in late.text
    # One log line per answer (the service's, which names the channel it came through), not two.
    answered = [line for line in gateway.output().splitlines() if f"answered hf={hf['id']}" in line]
    assert len(answered) == 1 and "via=web" in answered[0], answered
