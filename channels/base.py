"""The one protocol every channel (Slack, Discord, Teams, web, Telegram, email) implements, both
directions.

A channel is an adapter in the style of httpx's transports. Outbound: pure functions that *render* a
Human Function into the platform's payload, and *deliver* / *update*, the only I/O, done through a
client the caller gets from ``connect`` and injects. Inbound: the ``endpoints`` the gateway mounts
for it (paths, methods, body limits); *verify* / ``verify_inbound``, which raise ``SignatureError``
for a callback not signed as the platform signs; *parse*, which turns a callback into an ``Answer``
carrying the platform's verified ``Person``. An endpoint's handler asks the gateway for what it
needs only through a ``Desk`` (get a Human Function, answer it, its form link, the clock, ...), so a
channel never imports the gateway. Rendering and parsing take no network, so most channel tests need
none. Channels are registered in one explicit table, ``channels.registry.CHANNELS``.

How a callback is opened, for a ``signed`` endpoint, is the gateway's one webhook opening: a channel
that is not configured is a 404 naming the missing settings, a body over ``body_limit`` a 413, a
``SignatureError`` from ``verify_inbound`` a 401, an ``InvalidRequestError`` from the handler a 400;
only then does the handler run. An unsigned endpoint (the web form) checks its requests itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

WEBHOOK_BODY_BYTES = 64 * 1024
"""Largest body of a platform callback (Slack, Discord and Teams send a few KiB)."""

FORM_BODY_BYTES = 64 * 1024
"""Largest web form post (a person's answer to at most 32 fields)."""


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What rendering needs beyond the Human Function itself; built by the caller, never by I/O."""

    form_url: str
    """The hosted web form of this Human Function (a capability URL: never log it)."""
    now: float
    """Seconds since the epoch, from the caller's (injectable) clock."""


@dataclass(frozen=True, slots=True)
class Inbound:
    """A request on one of a channel's endpoints, as the gateway opened it."""

    headers: Mapping[str, str]
    """The request's headers, with lower-case names."""
    body: bytes
    """The raw body (empty for an unsigned endpoint, whose handler reads the request itself)."""
    proof: Any = None
    """What ``verify_inbound`` established (Teams: the verified activity and its token's expiry)."""


class FormLink(Protocol):
    """A well-formed form link, read but not yet checked against any Human Function."""

    @property
    def hf_id(self) -> str:
        """The id of the Human Function the link names."""
        ...

    def opens(self, hf: HumanFunction) -> bool:
        """Whether this link's secret is ``hf``'s."""
        ...


class Drafts(Protocol):
    """What one person typed in a Human Function's form so far, kept until its deadline (a
    platform whose modals forget their values when they close keeps them here between steps)."""

    async def load(self, hf_id: str, user_id: str) -> dict[str, list[str]]: ...

    async def save(self, hf: HumanFunction, user_id: str, values: Mapping[str, list[str]]) -> None: ...

    async def drop(self, hf_id: str, user_id: str) -> None: ...


class Desk(Protocol):
    """What a channel's inbound handler may ask of the gateway, bound to that one channel.

    The gateway implements it (``gateway.desk``); tests may give a handler their own.
    """

    state: dict[str, Any]
    """This channel's long-lived objects in this process (Slack's clicks in progress), built on first use."""

    @property
    def settings(self) -> Settings:
        """The gateway's settings (the platform's secrets and allow-lists among them)."""
        ...

    @property
    def drafts(self) -> Drafts:
        """Form texts per (Human Function, person), kept until the deadline."""
        ...

    def now(self) -> float:
        """Seconds since the epoch, from the gateway's (injectable) clock."""
        ...

    async def get(self, hf_id: str) -> HumanFunction:
        """The Human Function ``hf_id``; raises ``UnknownRequestError`` or ``StoreUnavailableError``."""
        ...

    async def started(self, hf: HumanFunction, who: str | None = None) -> HumanFunction:
        """Mark that a person began answering ``hf`` (opened its form or modal), and write it in
        its audit trail as ``opened`` by ``who`` (as policies name people: ``slack:U1``; ``None``:
        a form link nobody signed in to) on this channel."""
        ...

    async def refused(self, hf: HumanFunction, who: str, why: str) -> None:
        """Write in ``hf``'s audit trail that ``who`` tried to answer on this channel and was
        refused, and ``why`` (``not_approver``); counted in ``humangate_refused_answers_total``."""
        ...

    async def answer(self, hf: HumanFunction, answer: Answer) -> HumanFunction:
        """Validate and record ``answer``; the ended Human Function. Raises ``InvalidAnswerError``,
        ``ClosedError`` (someone answered first, or it expired) or ``StoreUnavailableError``."""
        ...

    async def check_answer(self, schema: Mapping[str, Any], content: object) -> dict[str, Any]:
        """``content`` checked against ``schema`` as an answer (``schemas.answers.validate_answer``),
        off the event loop since it matches the agent's patterns; raises ``InvalidAnswerError``."""
        ...

    def form_url(self, hf: HumanFunction) -> str:
        """The absolute URL of ``hf``'s hosted web form (a capability: never log it)."""
        ...

    def read_form_link(self, token: str) -> FormLink | None:
        """The link a form token names; ``None`` for anything humangate never issues."""
        ...

    async def client(self) -> Any:
        """This channel's platform client in this process (what ``connect`` yields), opened once."""
        ...

    async def first_delivery(self, signature: str | bytes, window_seconds: int) -> bool:
        """True the first time this signed callback is seen within the window; False on a replay."""
        ...

    async def seen_before(self, signature: str | bytes) -> bool:
        """Whether ``first_delivery`` already claimed this callback (claims nothing): a channel that
        marks a callback only once it is applied checks with this first (Telegram's updates)."""
        ...

    async def position(self, stream: str) -> int | None:
        """How far this channel has read a stream of its platform, across every process (Telegram's
        next ``getUpdates`` offset); ``None`` when never recorded."""
        ...

    async def advance(self, stream: str, value: int) -> None:
        """Record how far this channel has read ``stream`` (``position`` returns it from then on)."""
        ...

    async def remember_post(self, hf_id: str, refs: dict[str, str]) -> bool:
        """Record where ``hf_id``'s post is, if no delivery recorded it (True when recorded now)."""
        ...

    async def signed_in_person(self, request: Request) -> Person | None:
        """Who is signed in to the web in this browser, through the organisation's OpenID provider
        (``Person(channel="email", id=<verified email>)``), or ``None`` (docs/sign-in.md)."""
        ...

    def sign_in_url(self, next_path: str) -> str | None:
        """The local link that signs a person in and brings them back to ``next_path``; ``None``
        when web sign-in is not configured."""
        ...


Handler = Callable[["Request", Inbound, Desk], Awaitable["Response"]]
"""An endpoint's handler: the request, as opened (verified when the endpoint is signed), and the desk."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One route the gateway mounts for a channel."""

    path: str
    """A Starlette path (``/f/{token}``); its body limit covers everything under its literal prefix."""
    methods: tuple[str, ...]
    handle: Handler
    body_limit: int = WEBHOOK_BODY_BYTES
    """Largest request body, refused with 413 before routing or any signature check."""
    signed: bool = True
    """Whether the gateway's webhook opening runs first (configured, body read, ``verify_inbound``)."""
    what: str = "a request"
    """What one request here is called in logs (``refused an interaction channel=discord: ...``)."""
    plain_errors: bool = False
    """Whether the opening's refusals are plain text (Slack's) rather than humangate's JSON body."""

    @property
    def limit_prefix(self) -> str:
        """The path (or, for a path with parameters, the prefix before the first one) the body
        limit applies to; a prefix ends with ``/`` and covers every path under it."""
        return self.path.split("{", 1)[0]


class Connected(Protocol):
    """The lease of a connection a channel opened (``gateway.core.lease.Held``)."""

    @property
    def slot(self) -> str:
        """Which of the platform's connections this is (``slack:0``)."""
        ...

    def touch(self) -> None:
        """Say that something arrived over the connection (``humangate doctor``'s last activity)."""
        ...


@dataclass(frozen=True, slots=True)
class Opening:
    """A connection a channel opens to its platform, so the platform needs no public URL of ours
    (Slack's Socket Mode, Discord's Gateway, Telegram's long polling).

    The process that holds one of the platform's lease slots calls ``run`` with that slot's lease and
    the channel's ``Desk``; ``run`` keeps the connection open (reconnecting by itself after a drop)
    and hands what arrives to the same handlers as the platform's HTTP callbacks, until cancelled.
    """

    platform: str
    """The lease name: its slots are ``<platform>:0`` .. ``<platform>:<slots-1>``."""
    slots: int
    """How many such connections the whole installation keeps open (each in one process)."""
    mode: str
    """The inbound mode in words, for ``humangate doctor`` (``socket mode``, ``gateway``)."""
    run: Callable[[Connected, Desk], Coroutine[Any, Any, None]]


class Channel(Protocol):
    """A platform a person answers on. Implementations hold no per-request state."""

    name: str
    title: str
    """The platform's name in sentences (``Slack is not configured on this gateway``)."""
    posts: bool
    """Whether the channel posts a message per request (and so has deliver and update jobs). The web
    form posts nothing: its page is rendered from the request's state whenever it is opened."""
    edits: bool
    """Whether ``update`` edits the post in place, so it may run again and again (Slack, Discord,
    Teams); ``False``: it sends a new message (an email's outcome reply), which the jobs ask for
    only once the request ended, and once per post."""
    target_setting: str | None
    """The ``Settings`` field that says where requests are posted (a policy's target replaces it
    per request, as ``HumanFunction.target``); ``None`` for a channel that posts nothing."""
    client_modules: tuple[str, ...]
    """Modules its client needs that are slow to import, which a worker imports as it starts
    (``workers.preload``); empty for most."""

    def missing_settings(self, settings: Settings) -> list[str]:
        """Names of the environment variables still needed; empty means configured."""
        ...

    def endpoints(self) -> list[Endpoint]:
        """The routes where the platform (or a person's browser) sends answers."""
        ...

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> Any:
        """Raise ``SignatureError`` unless a callback on a signed endpoint is authentic and fresh;
        return what the check established (kept as ``Inbound.proof``), or ``None``."""
        ...

    def render(self, hf: HumanFunction, ctx: RenderContext) -> Any:
        """The platform payload showing ``hf`` as it is now (pending form, or its outcome)."""
        ...

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        """Turn a platform callback into an answer, with the ``Person`` the platform vouches for;
        raises ``InvalidAnswerError`` on bad fields."""
        ...

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        """The platform's verified identity of whoever sent ``payload`` (a callback that passed
        ``verify_inbound``); ``None`` where no platform vouches for anyone (the web form's link)."""
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

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        """Reply ``text`` in the thread of the post ``hf.refs`` names (a reminder,
        docs/escalation.md#reminders); nothing when there is no post. Raise ``DeliveryError``."""
        ...

    async def check(self, settings: Settings) -> list[str]:
        """Problems a person must fix, in plain words (``humangate doctor``); empty when healthy."""
        ...

    def openings(self, settings: Settings) -> list[Opening]:
        """The connections this channel opens to its platform with these settings;
        empty when the platform reaches us only by calling our endpoints."""
        ...
