"""``/docs`` serves Swagger UI from the gateway itself and works in Chromium under its CSP."""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.async_api import Request, expect

from tests.browser import OpenPage
from tests.conftest import StartGateway


async def test_docs_assets_come_from_the_gateway(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        page = await client.get("/docs")
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self' 'nonce-" in csp
        assert "cdn" not in page.text and "https://" not in page.text
        bundle = await client.get("/docs/assets/swagger-ui-bundle.js")
        assert bundle.status_code == 200 and "SwaggerUIBundle" in bundle.text[:2000]
        assert bundle.headers["x-content-type-options"] == "nosniff"
        assert (await client.get("/docs/assets/swagger-ui.css")).status_code == 200
        assert (await client.get("/docs/assets/redoc.standalone.js")).status_code == 404  # not listed
        assert (await client.get("/docs/assets/..%2F__init__.py")).status_code == 404
        assert (await client.get("/redoc")).status_code == 404


@pytest.mark.browser
async def test_docs_work_in_chromium_with_nothing_from_elsewhere(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    watched = await open_page()
    page = watched.page
    requested: list[str] = []

    def record(request: Request) -> None:
        requested.append(request.url)

    page.on("request", record)
    await page.goto(f"{gateway.url}/docs")
    create = page.locator("#operations-requests-create_request")
    await create.locator(".opblock-summary").click()
    await create.get_by_role("button", name="Try it out").click()
    body = {"message": "From the docs", "schema": {"type": "object", "properties": {}}, "uiType": "web"}
    await create.locator("textarea.body-param__text").fill(json.dumps(body))
    await create.get_by_role("button", name="Execute").click()
    await expect(create.locator(".live-responses-table tbody td.response-col_status").first).to_have_text(
        "201"
    )
    assert await watched.problems() == []
    outside = [url for url in requested if not url.startswith((gateway.url, "data:"))]
    assert outside == []
