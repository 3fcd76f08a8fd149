"""``gateway.mcp.delivery``: a result counts as delivered only once it was written to a live client.

The watch sits between an ASGI server and the MCP transport; here its ``receive`` and ``send`` are
a client's side of one request, scripted message by message (the end-to-end drop through a real
proxy is in ``test_drop.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

import pytest
from starlette.types import Message

from gateway.mcp.delivery import DeliveryWatch, results_in


def sse(message: Mapping[str, object]) -> bytes:
    return f"event: message\r\ndata: {json.dumps(message)}\r\n\r\n".encode()


RESULT = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "ok"}]}}
ERROR = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "Request cancelled"}}
PROGRESS = {
    "jsonrpc": "2.0",
    "method": "notifications/progress",
    "params": {"progress": 1, "_meta": {"result": "x"}},  # a "result" key alone is no result
}
START: Message = {"type": "http.response.start", "status": 200, "headers": []}


def body(chunk: bytes, *, more: bool = True) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": more}


class Client:
    """One request's client: what it was sent, and a switch that disconnects it."""

    def __init__(self) -> None:
        self.written: list[Message] = []
        self.gone = asyncio.Event()

    async def receive(self) -> Message:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        self.written.append(message)


class Hooks:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def delivered(self) -> None:
        self.seen.append("delivered")

    def lost(self) -> None:
        self.seen.append("lost")


def watched() -> tuple[DeliveryWatch, Client, Hooks]:
    watch, client, hooks = DeliveryWatch(), Client(), Hooks()
    watch.after(7, hooks.delivered, hooks.lost)
    return watch, client, hooks


async def listening(watch: DeliveryWatch, client: Client) -> asyncio.Task[Message]:
    """What the transport does: read ``receive`` until the client disconnects."""
    receive, _ = watch.wrap(client.receive, client.send)

    async def read() -> Message:
        return await receive()

    task = asyncio.create_task(read())
    await asyncio.sleep(0)  # let it start waiting (a scheduling step, not a wait for a condition)
    return task


def test_results_are_found_in_sse_events_and_json_bodies_and_nothing_else() -> None:
    assert results_in(sse(RESULT)) == {7}
    assert results_in(json.dumps(RESULT).encode()) == {7}
    assert results_in(sse(ERROR)) == set()
    assert results_in(sse(PROGRESS)) == set()
    assert results_in(b": ping\r\n\r\n") == set()
    assert results_in(sse(RESULT | {"id": "a-1"}) + sse(PROGRESS)) == {"a-1"}


async def test_a_result_written_to_a_live_client_is_delivered_once() -> None:
    watch, client, hooks = watched()
    _, send = watch.wrap(client.receive, client.send)
    for message in (START, body(sse(PROGRESS)), body(sse(RESULT)), body(b"", more=False)):
        await send(message)
    watch.close()
    assert hooks.seen == ["delivered"]
    assert len(client.written) == 4


async def test_a_json_body_with_the_result_is_delivered() -> None:
    watch, client, hooks = watched()
    _, send = watch.wrap(client.receive, client.send)
    await send(START)
    await send(body(json.dumps(RESULT).encode(), more=False))
    assert hooks.seen == ["delivered"]


async def test_a_client_gone_before_the_result_loses_it() -> None:
    watch, client, hooks = watched()
    listener = await listening(watch, client)
    _, send = watch.wrap(client.receive, client.send)
    await send(START)
    client.gone.set()
    await listener
    assert hooks.seen == ["lost"] and watch.disconnected
    await send(body(sse(RESULT)))  # what the server writes to a gone client changes nothing
    assert hooks.seen == ["lost"]


async def test_a_disconnect_heard_just_before_the_result_is_written_loses_it() -> None:
    watch, client, hooks = watched()
    listener = await listening(watch, client)
    _, send = watch.wrap(client.receive, client.send)
    await send(START)
    client.gone.set()  # heard by the server, not yet read by the transport's listener
    await send(body(sse(RESULT)))
    assert listener.done()
    assert hooks.seen == ["lost"]


async def test_a_response_that_ends_without_the_result_loses_it() -> None:
    watch, client, hooks = watched()
    _, send = watch.wrap(client.receive, client.send)
    await send(START)
    await send(body(sse(ERROR)))  # the request was cancelled: an error, not the result
    await send(body(b"", more=False))
    assert hooks.seen == ["lost"]


async def test_a_result_registered_after_the_response_ended_is_lost_at_once() -> None:
    watch, client, _ = watched()
    _, send = watch.wrap(client.receive, client.send)
    await send(START)
    await send(body(sse(ERROR), more=False))
    late = Hooks()
    watch.after(8, late.delivered, late.lost)
    assert late.seen == ["lost"]


async def test_a_write_that_fails_loses_the_result() -> None:
    watch, _, hooks = watched()

    async def broken(message: Message) -> None:
        raise OSError("connection reset")

    async def never() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    _, send = watch.wrap(never, broken)
    with pytest.raises(OSError):
        await send(body(sse(RESULT)))
    assert hooks.seen == ["lost"]


async def test_a_request_that_ends_with_the_result_unwritten_loses_it() -> None:
    watch, _, hooks = watched()
    watch.close()
    assert hooks.seen == ["lost"]
