"""``GET /`` is a short HTML page that leads to the inbox, the API docs and health, and a fresh
gateway's ``/metrics`` has every known counter at 0, so a dashboard shows 0 before the first event."""

from __future__ import annotations

import re
from typing import get_args

import httpx
from prometheus_client.parser import text_string_to_metric_families

from channels.registry import channel_names
from gateway.core import audit, metrics
from schemas.models import Status
from schemas.settings import Settings
from tests.channels.inprocess import serving
from tests.conftest import StartGateway


async def test_the_front_page_links_the_inbox_the_api_docs_and_health(settings: Settings) -> None:
    async with serving(settings) as (_, client):
        page = await client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["content-security-policy"]
        links = re.findall(r'<a href="([^"]+)">', page.text)
        assert links == ["/inbox", "/docs", "/healthz"]
        for link in links:
            assert (await client.get(link)).status_code == 200, link
        assert (await client.get("/nothing-here")).status_code == 404


def samples(exposition: str) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (sample.name, tuple(sample.labels.values())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


async def test_a_fresh_gateway_exports_every_known_counter_at_zero(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        found = samples((await client.get("/metrics")).text)
    expected = (
        [("humangate_escalations_total", ())]
        + [("humangate_refused_answers_total", (reason,)) for reason in get_args(audit.Why)]
        + [("humangate_webhook_deliveries_total", (result,)) for result in metrics.DELIVERY_RESULTS]
        + [("humangate_requests_opened_total", (channel,)) for channel in channel_names()]
        + [("humangate_requests_ended_total", (s.value,)) for s in Status if s.is_terminal]
        + [("humangate_requests_limited_total", (limit,)) for limit in ("rate", "pending", "kept")]
    )
    assert {series: found.get(series) for series in expected} == dict.fromkeys(expected, 0.0)


def test_every_refusal_reason_is_a_known_label_value() -> None:
    assert metrics.REFUSED_ANSWERS in metrics.COUNTERS
    assert metrics.REFUSED_REASONS == get_args(audit.Why)
