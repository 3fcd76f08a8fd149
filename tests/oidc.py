"""A real OpenID Connect provider on 127.0.0.1 for the web sign-in tests: the ``oidc-provider-mock``
package (Authlib's authorization server behind a sign-in form), run as its own process.

It requires clients to register (so humangate's client id, secret and redirect URI are checked) and
a ``nonce`` in every authorization request. Its sign-in form asks for a subject; a person's claims
(email, ``email_verified``, name) are set beforehand with ``add_person``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx

from gateway.core.embedded import free_port

START_TIMEOUT = 30.0
"""Seconds the provider may take to answer its discovery URL."""


@dataclass
class Provider:
    """A running provider: its issuer URL, and what its admin endpoints can do."""

    issuer: str
    log: Path

    def register(self, redirect_uri: str) -> dict[str, str]:
        """Register a client (RFC 7591); the ``HUMANGATE_OIDC_*`` settings of a gateway that uses it."""
        response = httpx.post(f"{self.issuer}/oauth2/clients", json={"redirect_uris": [redirect_uri]})
        assert response.status_code == 201, response.text
        client = response.json()
        return {
            "HUMANGATE_OIDC_ISSUER": self.issuer,
            "HUMANGATE_OIDC_CLIENT_ID": client["client_id"],
            "HUMANGATE_OIDC_CLIENT_SECRET": client["client_secret"],
        }

    def add_person(self, subject: str, email: str, *, verified: bool = True, name: str | None = None) -> None:
        """The claims the provider vouches for when ``subject`` signs in."""
        claims: dict[str, object] = {"email": email, "email_verified": verified}
        if name is not None:
            claims["name"] = name
        response = httpx.put(f"{self.issuer}/users/{quote(subject, safe='')}", json=claims)
        assert response.status_code == 204, response.text

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def running_provider(log: Path) -> Iterator[Provider]:
    """Start ``python -m oidc_provider_mock`` on a free port; stop it on exit."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oidc_provider_mock",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--require-registration",
                "--require-nonce",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    provider = Provider(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the OpenID provider exited:\n{provider.output()}")
            try:
                if httpx.get(f"{provider.issuer}/.well-known/openid-configuration", timeout=1).is_success:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the OpenID provider did not start:\n{provider.output()}")
            time.sleep(0.05)  # readiness polling of a child process, bounded by the deadline
        yield provider
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
