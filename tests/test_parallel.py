"""The suite's own parallel run (pytest-xdist, ``scripts/test``): each worker keeps to its own Redis
database, and the slow tests share one xdist group."""

from __future__ import annotations

import pytest

from tests.conftest import SERIAL_GROUP, database_of_worker, xdist_worker_number


def test_each_xdist_worker_uses_its_own_database_of_a_given_server() -> None:
    url = "redis://:secret@redis.internal:6380/5"
    assert database_of_worker(url, None) == url
    assert database_of_worker(url, 0) == "redis://:secret@redis.internal:6380/0"
    assert database_of_worker("redis://127.0.0.1:6379", 3) == "redis://127.0.0.1:6379/3"


def test_the_worker_number_comes_from_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw11")
    assert xdist_worker_number() == 11
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert xdist_worker_number() is None


@pytest.mark.slow
def test_a_slow_test_is_in_the_serial_xdist_group(request: pytest.FixtureRequest) -> None:
    group = request.node.get_closest_marker("xdist_group")
    assert group is not None and group.args == (SERIAL_GROUP,)


def test_any_other_test_is_in_no_xdist_group(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("xdist_group") is None
