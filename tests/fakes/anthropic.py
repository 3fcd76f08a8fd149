"""A fake Anthropic Messages API (``POST /v1/messages``) on loopback, for the real Claude Code CLI.

The test scripts the model: ``FakeAnthropic(steps=[tool_use("Bash", {...}), ...], final="Done.")``.
A request of the agent's main loop (one that offers tools) is answered by the conversation's state,
not by a counter, so a retried request gets the same answer: with ``n`` tool results in its
messages, the reply is step ``n`` (a ``tool_use``), or the final text once the steps are used up.
Anything else the CLI asks the model for (a title, a summary: no tools) gets a short text, and any
other path a 404. Replies stream as the real API streams them (``message_start``,
``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``, ``message_stop``), or come back
whole when a request does not ask for ``stream``.

Every request is recorded by ``tests.fakes.server.FakeServer``; tests read back what the CLI sent
(``tool_results``) and wait on it with a deadline.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse, Response

from tests.fakes.server import WAIT, Call, FakeServer

MODEL = "claude-sonnet-4-5"
"""The model the fake says it is (the CLI sends whichever it picked; the fake ignores it)."""
SIDE_REPLY = "ok"
"""The text of a reply to a request that offers no tools (titles, summaries, quota checks)."""


def tool_use(name: str, tool_input: dict[str, Any], tool_use_id: str | None = None) -> dict[str, Any]:
    """One scripted ``tool_use`` content block; its id is made up when not given."""
    return {"type": "tool_use", "id": tool_use_id or "", "name": name, "input": tool_input}


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of one request's messages, oldest first."""
    return [
        block
        for message in body.get("messages", [])
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def result_text(result: dict[str, Any]) -> str:
    """A ``tool_result``'s content as one string (the CLI sends a string or a list of text blocks)."""
    content = result.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


@dataclass
class FakeAnthropic:
    steps: list[dict[str, Any]] = field(default_factory=list)
    """The ``tool_use`` blocks of the agent's turns, in order (one per turn)."""
    final: str = "Done."
    """The last turn's text, once every step has its tool result."""
    server: FakeServer = field(init=False)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        for number, step in enumerate(self.steps, 1):
            step["id"] = step["id"] or f"toolu_{number:02d}"
        self.server = FakeServer(self._handle)

    @property
    def url(self) -> str:
        """``ANTHROPIC_BASE_URL`` for the CLI."""
        return self.server.url

    @contextmanager
    def running(self) -> Iterator[FakeAnthropic]:
        with self.server.running():
            yield self

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of every ``POST /v1/messages`` of the agent's main loop, oldest first."""
        bodies = [call.json() for call in self.server.calls_to("/v1/messages", "POST")]
        return [body for body in bodies if body.get("tools")]

    def tool_results(self) -> dict[str, dict[str, Any]]:
        """Every tool result the CLI sent back, by ``tool_use_id``."""
        return {r["tool_use_id"]: r for body in self.requests() for r in tool_results(body)}

    async def wait_for_result(self, tool_use_id: str, timeout: float = WAIT) -> dict[str, Any]:
        """The tool result of ``tool_use_id``, once the CLI sent it back to the model."""

        def found(calls: list[Call]) -> dict[str, Any] | None:
            return self.tool_results().get(tool_use_id)

        return await self.server.wait_for(found, timeout)

    def _handle(self, call: Call) -> Response:
        if (call.method, call.path) != ("POST", "/v1/messages"):
            return JSONResponse(
                {"type": "error", "error": {"type": "not_found_error", "message": call.path}}, 404
            )
        body = call.json()
        content = [{"type": "text", "text": SIDE_REPLY}]
        if body.get("tools"):
            answered = len(tool_results(body))
            if answered < len(self.steps):
                content = [self.steps[answered]]
            else:
                content = [{"type": "text", "text": self.final}]
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        message = {
            "id": f"msg_{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            return JSONResponse(message)
        return Response(self._stream(message), media_type="text/event-stream")

    @staticmethod
    def _stream(message: dict[str, Any]) -> str:
        start = message | {
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        events = [_sse("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                opened = block | {"input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                opened = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            events += [
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opened},
                ),
                _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                _sse("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        stopped = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events += [
            _sse("message_delta", {"type": "message_delta", "delta": stopped, "usage": {"output_tokens": 5}}),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        return "".join(events)
