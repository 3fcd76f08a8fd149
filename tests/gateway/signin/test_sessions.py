"""Web sign-in records against a real Redis: a sign-in under way is used once and only by its
browser; a session is kept under a hash of its cookie, with a TTL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from gateway.signin.provider import Identity
from gateway.signin.sessions import SESSION_SECONDS, SIGN_IN_SECONDS, WebSessions
from schemas.models import Person


@pytest.fixture
async def sessions(redis_url: str) -> AsyncIterator[WebSessions]:
    redis = Redis.from_url(redis_url)
    yield WebSessions(redis)
    await redis.aclose()


async def test_a_sign_in_under_way_is_taken_once_by_its_own_browser(sessions: WebSessions) -> None:
    start = await sessions.start("/f/abc.def")
    (key,) = await sessions.redis.keys("hg:web-sign-in:*")
    assert 0 < await sessions.redis.ttl(key) <= SIGN_IN_SECONDS
    assert start.state.encode() not in key  # found by a hash of the state, never the state itself
    assert await sessions.take(start.state, "another-browser-cookie-" + "x" * 20) is None
    assert await sessions.take(start.state, start.browser) is None  # a wrong browser used it up

    again = await sessions.start("/f/abc.def")
    taken = await sessions.take(again.state, again.browser)
    assert taken is not None
    assert (taken.next, taken.nonce, taken.verifier) == ("/f/abc.def", again.nonce, again.verifier)
    assert await sessions.take(again.state, again.browser) is None  # a state works once
    assert await sessions.take("not a state", again.browser) is None


async def test_two_tabs_of_one_browser_can_both_finish_signing_in(sessions: WebSessions) -> None:
    first = await sessions.start("/f/one.x")
    second = await sessions.start("/f/two.y", first.browser)  # the browser sent its sign-in cookie
    assert second.browser == first.browser and second.state != first.state
    assert (await sessions.start("/", "not-a-cookie")).browser != "not-a-cookie"
    one, two = (
        await sessions.take(first.state, first.browser),
        await sessions.take(second.state, first.browser),
    )
    assert one is not None and one.next == "/f/one.x"
    assert two is not None and two.next == "/f/two.y"


async def test_a_session_names_the_person_until_it_is_closed(sessions: WebSessions) -> None:
    cookie = await sessions.open(Identity("ada@example.com", "Ada Lovelace"))
    (key,) = await sessions.redis.keys("hg:web-session:*")
    assert cookie.encode() not in key
    assert SESSION_SECONDS - 5 < await sessions.redis.ttl(key) <= SESSION_SECONDS
    assert await sessions.person(cookie) == Person(channel="email", id="ada@example.com", name="Ada Lovelace")
    assert await sessions.person(cookie[:-1] + ("A" if cookie[-1] != "A" else "B")) is None
    assert await sessions.person(None) is None and await sessions.person("short") is None
    await sessions.close(cookie)
    assert await sessions.person(cookie) is None
    await sessions.close(cookie)  # closing twice is harmless
