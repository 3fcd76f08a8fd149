"""No input gives a 5xx, every status is documented, and errors use humangate's body (real gateway)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import StartGateway
from tests.gateway.mcp_openapi import mcp_openapi
from tests.mcp_client import INITIALIZE
from tests.mcp_client import MCP_HEADERS as JSON_RPC

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS_TIMEOUT = 240
"""Seconds the schemathesis run may take (about 20 s on 2 cores, 300 examples per operation)."""

EMPTY = {"type": "object", "properties": {}}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "elicit",
}
RAW_ELICIT = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {'
    b'"io.modelcontextprotocol/protocolVersion": "2026-07-28", '
    b'"io.modelcontextprotocol/clientCapabilities": {}}, "name": "elicit", "arguments": '
    b'{"message": "a\\ud800", "schema": {"type": "object", "properties": {}}, "uiType": "web"}}}'
)
"""A 2026-07-28 ``tools/call`` of ``elicit`` whose message holds a lone surrogate (JSON escape)."""


@pytest.mark.slow
@pytest.mark.timeout(SCHEMATHESIS_TIMEOUT + 30)
def test_schemathesis_finds_no_server_error_and_no_undocumented_response(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    gateway = start_gateway()
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(CONFIG),
        "run",
        f"{gateway.url}/openapi.json",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--checks",
        "all",
        # DELETE withdraws a request; it stays readable with its canceled result, which
        # this check would call a deleted resource that is still there
        # (docs/human-functions.md#withdrawing).
        "--exclude-checks",
        "use_after_free",
        "--max-examples",
        "300",
        "--seed",
        "20261124",
        "--generation-database",
        "none",
        "--no-color",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=SCHEMATHESIS_TIMEOUT, check=False
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    # The stateful phase chained calls along every link of the OpenAPI (declared and inferred).
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected / (\d+) total", run.stdout)
    assert links is not None and int(links.group(1)) >= 4, run.stdout[-3000:]
    assert links.group(1) == links.group(2) == links.group(3), run.stdout[-3000:]
    assert "Traceback" not in gateway.output()


@pytest.mark.slow
@pytest.mark.timeout(SCHEMATHESIS_TIMEOUT + 60)
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_schemathesis_finds_no_server_error_on_mcp_with_a_session(
    start_gateway: StartGateway, tmp_path: Path, era: str
) -> None:
    # Calls that open a request wait 1 s, so valid ones end quickly; the cap of sessions is no limit here.
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="1", HUMANGATE_POLL_INTERVAL="1")
    opened = httpx.post(f"{gateway.url}/mcp", json=INITIALIZE, headers=JSON_RPC, timeout=30)
    assert opened.status_code == 200, opened.text
    if era == "2025-11-25":
        headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": era}
    else:
        headers = {"MCP-Protocol-Version": era, "Mcp-Method": "tools/call", "Mcp-Name": "elicit"}
    schema = tmp_path / "mcp-openapi.json"
    schema.write_text(json.dumps(mcp_openapi(era)))
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        str(schema),
        "--url",
        gateway.url,
        "--phases",
        "examples,coverage,fuzzing",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        "150",
        "--seed",
        "20261128",
        "--generation-database",
        "none",
        "--no-color",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    for name, value in (JSON_RPC | headers).items():
        command += ["-H", f"{name}: {value}"]
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=SCHEMATHESIS_TIMEOUT, check=False
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "Traceback" not in gateway.output()


async def test_lone_surrogates_are_a_422_naming_the_field(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    cases: list[tuple[str, str]] = [
        (
            '{"message": "a\\ud800b", "schema": {"type": "object", "properties": {}}}',
            "message: must be valid Unicode text (a lone surrogate at position 1)",
        ),
        (
            '{"message": "ok", "schema": {"type": "object", "properties": {"x\\udc00": {"type": "string"}}}}',
            "Invalid schema: properties.x\ufffd: must be valid Unicode text (it holds a lone surrogate)",
        ),
        (
            '{"message": "ok", "schema": {"type": "object", "title": "\\ud83d", "properties": {}}}',
            "Invalid schema: title: must be valid Unicode text (it holds a lone surrogate)",
        ),
    ]
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        for body, detail in cases:
            response = await client.post(
                "/v1/requests", content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 422, response.text
            assert response.json()["detail"] == detail
        not_utf8 = await client.post(
            "/v1/requests", content=b'{"message": "\xff"}', headers={"Content-Type": "application/json"}
        )
        assert not_utf8.status_code == 422
        assert not_utf8.json() == {
            "error": "InvalidRequestError",
            "detail": "body: must be JSON text in UTF-8",
            "violations": [{"path": "body", "rule": "must be JSON text in UTF-8"}],
        }
        # The official client cannot even encode such a message, so the call is written by hand.
        over_mcp = await client.post("/mcp", content=RAW_ELICIT, headers=MCP_HEADERS)
    assert over_mcp.status_code == 200
    result = json.loads(over_mcp.text.removeprefix("event: message\r\n").removeprefix("data: "))["result"]
    assert result["isError"] is True
    assert (
        result["content"][0]["text"] == "message: must be valid Unicode text (a lone surrogate at position 1)"
    )
    assert "Traceback" not in gateway.output()


async def test_a_malformed_request_gets_humangates_422_naming_each_field(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        response = await client.post(
            "/v1/requests", json={"message": 5, "schema": [], "uiType": "fax", "extra": 1}
        )
        missing = await client.post("/v1/requests", json={"schema": EMPTY})
        broken = await client.post(
            "/v1/requests", content=b"{nope", headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 422
    assert response.json()["error"] == "InvalidRequestError"
    assert response.json()["violations"] == [
        {"path": "message", "rule": "must be a string"},
        {"path": "schema", "rule": "must be a JSON object"},
        {
            "path": "uiType",
            "rule": "must be one of: 'slack', 'discord', 'teams', 'web', 'telegram' or 'email'",
        },
        {"path": "extra", "rule": "is not a field of this request"},
    ]
    assert missing.json() == {
        "error": "InvalidRequestError",
        "detail": "message: is required",
        "violations": [{"path": "message", "rule": "is required"}],
    }
    assert broken.json()["violations"][0]["path"] == "body"
    assert broken.json()["violations"][0]["rule"].startswith("is not valid JSON")


async def test_a_wrong_method_lists_every_method_of_the_path(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        one = await client.request("PATCH", "/v1/requests/0123456789abcdef")
        unknown = await client.get("/nowhere")
    assert one.status_code == 405
    assert one.headers["allow"] == "DELETE, GET"
    assert one.json() == {"error": "MethodNotAllowed", "detail": "Method Not Allowed"}
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "NotFound", "detail": "Not Found"}


async def test_the_openapi_documents_every_status_with_humangates_error_body(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        document: dict[str, Any] = (await client.get("/openapi.json")).json()
    statuses = {
        (path, method): sorted(operation["responses"])
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    assert statuses == {
        ("/v1/requests", "post"): ["200", "201", "401", "403", "413", "422", "429", "503"],
        ("/v1/requests/{hf_id}", "get"): ["200", "401", "404", "422", "503"],
        ("/v1/requests/{hf_id}", "delete"): ["200", "401", "404", "409", "422", "503"],
        ("/v1/requests/{hf_id}/events", "get"): ["200", "401", "404", "422", "503"],
    }
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    components = document["components"]["schemas"]
    assert "HTTPValidationError" not in components
    assert set(components["ErrorBody"]["properties"]) == {"error", "detail", "violations", "fields"}
