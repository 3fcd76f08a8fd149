"""The REST API at /v1 (real gateway process)."""

from __future__ import annotations

import asyncio

import httpx

from tests.conftest import StartGateway

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def test_create_read_and_withdraw_a_request(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS="ci:k1,ops:k2")
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer k1"}) as client:
        created = await client.post(
            "/v1/requests", json={"message": "Ship it?", "schema": APPROVAL, "uiType": "web"}
        )
        assert created.status_code == 201
        body = created.json()
        assert body["status"] == "pending" and body["requester"] == "ci" and body["result"] is None
        assert body["deadline"] - body["created_at"] == 300
        assert body["form_url"].startswith(f"{gateway.url}/f/{body['id']}.")
        other = await client.get(f"/v1/requests/{body['id']}", headers={"Authorization": "Bearer k2"})
        assert other.status_code == 404  # another caller cannot see it
        withdrawn = await client.delete(f"/v1/requests/{body['id']}")
        assert withdrawn.json()["result"] == {
            "text": "User canceled: Request canceled by the agent",
            "isError": True,
            "structuredContent": {
                "action": "cancel",
                "content": None,
                "reason": "Request canceled by the agent",
                "id": body["id"],
                "answeredBy": None,
            },
        }
        again = await client.delete(f"/v1/requests/{body['id']}")
        assert again.status_code == 409
        assert again.json()["detail"] == "already canceled by ci"


async def test_invalid_bodies_name_the_field_and_rule(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        nested = {"type": "object", "properties": {"user": {"type": "object"}}}
        bad_schema = await client.post("/v1/requests", json={"message": "x", "schema": nested})
        assert bad_schema.status_code == 422
        assert bad_schema.json()["violations"] == [
            {"path": "properties.user", "rule": "nested objects are not allowed"}
        ]
        missing = await client.post("/v1/requests", json={"schema": APPROVAL})
        assert missing.status_code == 422
        assert missing.json()["violations"] == [{"path": "message", "rule": "is required"}]
        too_big = await client.post("/v1/requests", content=b"{" + b" " * 300_000 + b"}")
        assert too_big.status_code == 413
        assert "must be at most 262144 bytes" in too_big.json()["detail"]
        wrong_key = await client.get("/v1/requests/abc", headers={"Authorization": "Bearer nope"})
        assert wrong_key.status_code == 401


async def test_an_unwatched_request_expires_on_time(start_gateway: StartGateway) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="1", HUMANGATE_POLL_INTERVAL="0.2")
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        created = (await client.post("/v1/requests", json={"message": "Anyone?", "schema": APPROVAL})).json()
        deadline = created["deadline"]
        body = created
        async with asyncio.timeout(20):
            while body["status"] == "pending":
                await asyncio.sleep(0.1)  # polling interval of a condition wait bounded by the timeout
                body = (await client.get(f"/v1/requests/{created['id']}")).json()
    assert body["status"] == "expired"
    assert body["result"]["text"] == "User canceled: Request timed out after 1 second"
    assert deadline <= body["created_at"] + 1
