"""2025-11-25 MCP sessions that any gateway process can serve.

The SDK keeps a session in the memory of the process that received its ``initialize``. With
``serve --workers N`` the kernel hands each connection to any of the N processes, and a restarted
gateway remembers nothing, so a client would get "Session not found" at random. Here the little a
session is (its owner, protocol version and the client's ``initialize`` parameters) is also kept
in Redis when it opens, and a process that gets a request for a session it does not hold *adopts*
it: it builds the same transport and connection, already initialized, and serves the request.
Sessions are bound to the caller that opened them: any other caller is told they do not exist.
A process drops a session it holds after ``LOCAL_IDLE_TIMEOUT`` without a request in flight
(adopting it again costs one Redis read), while the record lives ``SESSION_TTL`` past last use.

This reaches into the SDK session manager's private state (its session table, task group and
lifespan), all of it in this one module; ``tests/gateway/test_sessions.py`` fails loudly if an SDK
upgrade changes it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, ErrorData, InitializeRequestParams, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from gateway.core.callers import ANONYMOUS_CALLER, CALLER_STATE_KEY, Caller
from gateway.mcp.replies import ReplyRouter, is_reply
from gateway.mcp.session_registry import SessionRecord, SessionRegistry
from schemas.errors import InvalidJsonError, StoreUnavailableError
from schemas.json_text import read_json

logger = logging.getLogger(__name__)

LOCAL_IDLE_TIMEOUT = 120.0
"""Seconds a process keeps a session with no request in flight before dropping it from memory."""


TOUCH_INTERVAL = 60.0
"""Seconds between two refreshes of a used session's record by one process."""


MAX_SESSIONS_PER_KEY = 100
"""Open sessions one API key may keep (a client needs one; a fleet of agents sharing a key, more)."""


MAX_SESSIONS_PER_ADDRESS = 20
"""Open sessions the anonymous callers of one client address may keep together."""


def _caller(scope: Scope) -> Caller:
    caller: Caller = scope.get("state", {}).get(CALLER_STATE_KEY, ANONYMOUS_CALLER)
    return caller


def _error(message: str, status: int, code: int = INVALID_REQUEST) -> Response:
    body = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
    return Response(
        body.model_dump_json(by_alias=True, exclude_unset=True), status, media_type="application/json"
    )


def _opening_record(body: bytes, owner: str) -> SessionRecord | None:
    """The record of a session from the body of the ``initialize`` request that opened it."""
    try:
        message = read_json(body)
        params: dict[str, Any] = message["params"] if message.get("method") == "initialize" else {}
        requested = InitializeRequestParams.model_validate(params, by_name=False).protocol_version
    except (InvalidJsonError, ValueError, KeyError, TypeError, AttributeError):
        return None
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return SessionRecord(owner, version, params)


class SharedSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with sessions that live in Redis as well as in one process."""

    def __init__(self, *args: Any, registry: SessionRegistry | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registry = registry
        self.sessions_per_key = 100
        """Open sessions per API key (``HUMANGATE_MAX_SESSIONS``, set by ``build_mcp``)."""
        self.sessions_per_address = 20
        """Open sessions per anonymous client address (``HUMANGATE_ANONYMOUS_MAX_SESSIONS``)."""
        self.replies: ReplyRouter | None = None
        """Carries clients' replies between processes (set, with the registry, once Redis is known)."""
        self._owners: dict[str, str] = {}
        self._touched: dict[str, float] = {}

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = next(
            (
                v.decode("latin-1")
                for k, v in scope["headers"]
                if k.decode("latin-1").lower() == MCP_SESSION_ID_HEADER
            ),
            None,
        )
        caller = _caller(scope)
        owner = caller.identity
        if session_id is None:
            await self._open(scope, receive, send, caller)
            return
        try:
            if session_id not in self._server_instances and not await self._adopt(session_id, owner):
                await _error("Session not found", 404)(scope, receive, send)
                return
        except StoreUnavailableError as exc:
            logger.warning("cannot look up MCP session %s: %s", session_id[:12], exc)
            await _error("humangate's store is unavailable; retry in a few seconds", 503, INTERNAL_ERROR)(
                scope, receive, send
            )
            return
        if self._owners.get(session_id) != owner:
            logger.warning("refused a request for MCP session %s from another caller", session_id[:12])
            await _error("Session not found", 404)(scope, receive, send)
            return
        await self._touch(session_id, owner)
        if scope["method"] == "POST" and self.replies is not None:
            replayed = await self._carry_reply(scope, receive, send, session_id)
            if replayed is None:
                return
            receive = replayed
        await super()._handle_stateful_request(scope, receive, send)
        if scope["method"] == "DELETE" and session_id not in self._server_instances:
            await self._forget(session_id, owner)

    async def _open(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        """Serve a session's opening request within the caller's cap: a slot is reserved in Redis
        before anything is served (atomically, whichever process asks), becomes the session when it
        opens (recorded before the client can use it) and is given back when it does not."""
        owner = caller.identity
        cap = self.sessions_per_key if caller.authenticated else self.sessions_per_address
        reservation: str | None = None
        if self.registry is not None:
            try:
                reservation = await self.registry.admit(owner, cap)
            except StoreUnavailableError as exc:  # the session still works in this process
                logger.warning("MCP session opened without a reserved slot (Redis unavailable): %s", exc)
            else:
                if reservation is None:
                    logger.warning("refused a new MCP session: %s keeps %d open already", caller.name, cap)
                    message = (
                        f"Too many open sessions for this caller (at most {cap}): end one (DELETE /mcp) "
                        "or wait for an idle one to expire"
                    )
                    await _error(message, 429)(scope, receive, send)
                    return
        body = bytearray()
        opened = False

        async def tee() -> Message:
            received = await receive()
            if received["type"] == "http.request":
                body.extend(received.get("body", b""))
            return received

        async def record_then_send(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = next(
                    (
                        v.decode()
                        for k, v in message.get("headers", [])
                        if k.decode().lower() == MCP_SESSION_ID_HEADER
                    ),
                    None,
                )
                if session_id is not None:
                    opened = True
                    self._owners[session_id] = owner
                    record = _opening_record(bytes(body), owner)
                    if record is not None:  # otherwise the reservation lapses after its lease
                        await self._save(session_id, record, reservation)
            await send(message)

        try:
            await super()._handle_stateful_request(scope, tee, record_then_send)
        finally:
            if not opened and reservation is not None:
                with anyio.CancelScope(shield=True):
                    await self._release(owner, reservation)

    async def _carry_reply(
        self, scope: Scope, receive: Receive, send: Send, session_id: str
    ) -> Receive | None:
        """Carry a client's reply to the process waiting for it (``None``: carried and answered);
        otherwise the ``receive`` that replays the body to this process's transport."""
        assert self.replies is not None
        body = bytearray()
        while True:
            message = await receive()
            body.extend(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        if is_reply(bytes(body)):
            try:
                inbox = await self.replies.elsewhere(session_id)
                if inbox is not None:
                    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
                    await self.replies.carry(inbox, session_id, bytes(body), headers)
                    await Response(status_code=202)(scope, receive, send)
                    return None
            except StoreUnavailableError as exc:
                logger.warning("a reply on MCP session %s stays here: %s", session_id[:12], exc)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return replay

    async def deliver_reply(self, session_id: str, body: bytes, headers: dict[str, str]) -> None:
        """Hand a reply carried from another process to this process's transport of the session."""
        transport = self._server_instances.get(session_id)
        if transport is None:
            logger.info("a carried reply for MCP session %s found no session here", session_id[:12])
            return
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "root_path": "",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "client": None,
            "server": None,
            "state": {},
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def discard(message: Message) -> None:
            return None

        await transport.handle_request(scope, receive, discard)

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self._owners.pop(session_id, None)
        self._touched.pop(session_id, None)
        await super()._discard_session(session_id, transport)

    async def _save(self, session_id: str, record: SessionRecord, reservation: str | None) -> None:
        if self.registry is None:
            return
        try:
            await self.registry.save(session_id, record, reservation)
            self._touched[session_id] = time.monotonic()
        except StoreUnavailableError as exc:  # the session still works in this process
            logger.warning("MCP session %s not shared (Redis unavailable): %s", session_id[:12], exc)

    async def _release(self, owner: str, reservation: str) -> None:
        assert self.registry is not None
        try:
            await self.registry.release(owner, reservation)
        except StoreUnavailableError as exc:
            logger.info("could not give back a reserved MCP session slot (it lapses): %s", exc)

    async def _touch(self, session_id: str, owner: str) -> None:
        now = time.monotonic()
        if self.registry is None or now - self._touched.get(session_id, 0.0) < TOUCH_INTERVAL:
            return
        self._touched[session_id] = now
        try:
            await self.registry.touch(session_id, owner)
        except StoreUnavailableError as exc:
            logger.info("could not refresh MCP session %s: %s", session_id[:12], exc)

    async def _forget(self, session_id: str, owner: str) -> None:
        if self.registry is not None:
            try:
                await self.registry.delete(session_id, owner)
            except StoreUnavailableError as exc:
                logger.info("could not delete MCP session %s (it expires): %s", session_id[:12], exc)

    async def _adopt(self, session_id: str, owner: str) -> bool:
        """Serve here a session opened elsewhere (or before a restart); False if there is none, or
        it belongs to another caller (who must not learn it exists)."""
        if self.registry is None:
            return False
        record = await self.registry.load(session_id)
        if record is None or record.owner != owner:
            return False
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return True
            transport = StreamableHTTPServerTransport(
                mcp_session_id=session_id,
                is_json_response_enabled=self.json_response,
                event_store=self.event_store,
                security_settings=self.security_settings,
                retry_interval=self.retry_interval,
                idle_timeout=self.session_idle_timeout,
            )
            self._server_instances[session_id] = transport
            self._owners[session_id] = owner
            assert self._task_group is not None
            await self._task_group.start(self._serve_adopted, transport, record)
        logger.info("adopted MCP session %s", session_id[:12])
        return True

    async def _serve_adopted(
        self,
        transport: StreamableHTTPServerTransport,
        record: SessionRecord,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The adopted session's server task: the SDK's own, with a connection born initialized."""
        session_id = transport.mcp_session_id
        assert session_id is not None
        async with transport.connect() as (read_stream, write_stream):
            task_status.started()
            try:
                idle_scope = transport.idle_scope or anyio.CancelScope()
                with idle_scope:
                    dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                        read_stream, write_stream, inline_methods=frozenset({"initialize"})
                    )
                    connection = Connection.for_loop(
                        dispatcher, session_id=session_id, protocol_version_hint=record.version
                    )
                    connection.client_params = InitializeRequestParams.model_validate(
                        record.params, by_name=False
                    )
                    connection.initialized.set()
                    await serve_connection(
                        self.app, dispatcher, connection=connection, lifespan_state=self._lifespan_state
                    )
            except Exception:
                logger.exception("adopted MCP session %s crashed", session_id[:12])
            finally:
                await self._discard_session(session_id, transport)
