"""A real webhook receiver for tests and benchmarks: an HTTP server on 127.0.0.1 in a thread that
records every POST (headers, body, arrival time) and answers with scripted status codes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
"""The secret the tests' webhooks are configured with (24 random-looking bytes, base64)."""


@dataclass(frozen=True)
class Received:
    """One POST as it arrived."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def verified(self, secret: str = SECRET) -> object:
        """The body, parsed, if its signature verifies with the library (else it raises)."""
        return Webhook(secret).verify(self.body, self.headers)


class Receiver:
    """Records POSTs; ``statuses`` maps the attempt number of a message (the requests so far with
    its ``webhook-id``, from 1) to the status answered."""

    def __init__(self, statuses: Callable[[int], int] = lambda _n: 200) -> None:
        self.statuses = statuses
        self.received: list[Received] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._changed:
                    receiver.received.append(Received(self.path, headers, body, time.time()))
                    message = headers.get("webhook-id")
                    number = sum(1 for r in receiver.received if r.headers.get("webhook-id") == message)
                    receiver._changed.notify_all()
                self.send_response(receiver.statuses(number))
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the tests read ``received``."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """The first ``count`` requests, once they have arrived (``AssertionError`` past ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"{len(self.received)} of {count} webhook requests arrived in {timeout} s"
                self._changed.wait(left)
            return list(self.received[:count])


@contextmanager
def running_receiver(statuses: Callable[[int], int] = lambda _n: 200) -> Iterator[Receiver]:
    """A receiver serving in a thread until the block ends."""
    receiver = Receiver(statuses)
    thread = threading.Thread(
        target=receiver.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(5)


def policy_text(url: str, events: list[str] | None = None) -> str:
    """The text of a policy file with one webhook to ``url``."""
    listed = "" if events is None else "events = [" + ", ".join(f'"{e}"' for e in events) + "]\n"
    return f'[[webhooks]]\nurl = "{url}"\nsecret = "{SECRET}"\n{listed}'
