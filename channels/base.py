"""The one protocol every channel (Slack, Discord, Teams, web) implements.

A channel is an adapter in the style of arq's settings classes: a ``name``; pure functions that
*render* a Human Function into the platform's payload and *parse* a platform callback into an
``Answer``; *verify*, which raises ``SignatureError`` for an inbound callback that is not signed as
the platform signs; and *deliver* / *update*, the only I/O, done through a client the caller gets
from ``connect`` and injects. Rendering and parsing take no network, so most channel tests need
none. Channels are registered in one explicit table, ``channels.registry.CHANNELS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from schemas.models import Answer, HumanFunction
from schemas.settings import Settings


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What rendering needs beyond the Human Function itself; built by the caller, never by I/O."""

    form_url: str
    """The hosted web form of this Human Function (a capability URL: never log it)."""
    now: float
    """Seconds since the epoch, from the caller's (injectable) clock."""


class Channel(Protocol):
    """A platform a person answers on. Implementations hold no per-request state."""

    name: str
    posts: bool
    """Whether the channel posts a message per request (and so has deliver and update jobs). The web
    form posts nothing: its page is rendered from the request's state whenever it is opened."""
    target_setting: str | None
    """The ``Settings`` field that says where requests are posted (a policy's target replaces it
    per request, as ``HumanFunction.target``); ``None`` for a channel that posts nothing."""

    def missing_settings(self, settings: Settings) -> list[str]:
        """Names of the environment variables still needed; empty means configured."""
        ...

    def render(self, hf: HumanFunction, ctx: RenderContext) -> Any:
        """The platform payload showing ``hf`` as it is now (pending form, or its outcome)."""
        ...

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        """Turn a platform callback into an answer; raises ``InvalidAnswerError`` on bad fields."""
        ...

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        """Raise ``SignatureError`` unless the callback is authentic and fresh (``headers`` has
        lower-case names; ``settings`` carries the platform's signing secret or public key)."""
        ...

    def connect(self, settings: Settings) -> AbstractAsyncContextManager[Any]:
        """An async context manager yielding the client ``deliver`` and ``update`` use."""
        ...

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        """Post the request; return the references needed to update it later (message ids).

        Must not post twice for one Human Function: ``hf.delivery_attempts`` above 1 means an earlier
        attempt may have posted without recording its references, so look for that post first (or
        use the platform's idempotency key). Raise ``DeliveryError`` (``retryable`` or not) on failure.
        """
        ...

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        """The references of a message posted for ``hf`` whose references were never recorded (the
        worker stopped between posting and recording), or ``None`` if there is none."""
        ...

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        """Show the outcome of an ended ``hf`` in place (``hf.refs`` says where) and disable its inputs."""
        ...

    async def check(self, settings: Settings) -> list[str]:
        """Problems a person must fix, in plain words (``humangate doctor``); empty when healthy."""
        ...
