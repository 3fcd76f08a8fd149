"""docs/state-machine.md against a real redis-server: every documented transition happens, the
documented hash fields are exactly the fields written (by exactly the documented writers), and
every key ``gateway.core.redis_keys`` builds is on the page, spelled as it is built."""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from channels.display import AGENT_VIA
from gateway.core import redis_keys as keys
from gateway.core import store_scripts as scripts
from gateway.core.queue import JobRecorder
from gateway.core.redis_client import text
from gateway.core.store import HumanFunctionStore, Opened
from schemas.errors import ApprovalRefusedError
from schemas.models import Action, Approval, HumanFunction, Outcome, Status
from schemas.results import expired_outcome

DOC = Path(__file__).parents[3] / "docs" / "state-machine.md"
NOW = 1_800_000_000.0
REASON = "Request timed out after 3 minutes"
IDLE_REASON = "Request timed out after 1 minute"
JOBS = JobRecorder()


def table(heading: str) -> list[dict[str, str]]:
    """The first Markdown table under ``heading`` in the doc, as one dict per row."""
    lines = DOC.read_text().splitlines()
    start = lines.index(next(line for line in lines if re.fullmatch(rf"#+ {re.escape(heading)}", line)))
    below = itertools.dropwhile(lambda line: not line.startswith("|"), lines[start + 1 :])
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), below))

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip().strip("|").split("|")]

    header = cells(rows[0])
    return [dict(zip(header, cells(line), strict=True)) for line in rows[2:]]


def names(cell: str) -> set[str]:
    """The code names of a cell: ``CREATE``, ``store.set_refs``, ..."""
    return set(re.findall(r"`([^`]+)`", cell))


@dataclass(frozen=True)
class Snapshot:
    """What the state machine knows of one request: its hash, and the keys of its sub-states."""

    hf_id: str
    fields: dict[str, str]
    attach: str | None
    """The id its attach key names."""
    unsynced: bool

    @property
    def status(self) -> str:
        return self.fields["status"]


def field_name(name: str) -> str:
    """A hash field as the doc names it: ``approval:2`` is ``approval:<n>``, ``approved:slack:U1``
    is ``approved:<person>``."""
    if re.fullmatch(r"approval:\d+", name):
        return "approval:<n>"
    return "approved:<person>" if name.startswith("approved:") else name


SUB_STATES: dict[str, Callable[[Snapshot], bool]] = {
    "idle deadline": lambda s: "full_deadline" in s.fields,
    "delivery started": lambda s: int(s.fields.get("attempts", "0")) > 0,
    "delivery references": lambda s: "refs" in s.fields,
    "delivery note": lambda s: "delivery_error" in s.fields,
    "kept result": lambda s: s.fields.get("retain") == "1" and s.attach == s.hf_id,
    "returned mark": lambda s: s.fields.get("returned") == "1",
    "update owed": lambda s: s.unsynced,
    "counts approvals": lambda s: "needed" in s.fields,
    "approvals recorded": lambda s: int(s.fields.get("approval_count", "0")) > 0,
    "declines on timeout": lambda s: s.fields.get("expire_action") == "decline",
}
"""How the test reads each documented sub-state off Redis."""


def check_state(documented: str, snapshot: Snapshot | None) -> None:
    """``pending (idle deadline, no delivery note)`` holds for ``snapshot`` (``—``: no hash)."""
    if documented == "—":
        assert snapshot is None
        return
    match = re.fullmatch(r"(\w+)(?: \((.*)\))?", documented)
    assert match is not None, f"unreadable state {documented!r}"
    assert snapshot is not None
    assert snapshot.status == Status(match[1]).value
    for condition in filter(None, (match[2] or "").split(", ")):
        wanted = not condition.startswith("no ")
        name = condition.removeprefix("no ")
        assert SUB_STATES[name](snapshot) is wanted, f"{documented}: {name} is not {wanted}"


@dataclass
class Machine:
    """Drives the store and records, for each write, the fields it set and removed."""

    store: HumanFunctionStore
    written: dict[str, set[str]] = field(default_factory=dict)
    removed: dict[str, set[str]] = field(default_factory=dict)
    seen_fields: set[str] = field(default_factory=set)

    @property
    def redis(self) -> Redis:
        return self.store.redis

    def writers(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """The documented writer names and the store method that runs each (scripts by their
        constant: ``HumanFunctionStore.create`` runs ``CREATE``, and so on)."""
        s = self.store
        return {
            "CREATE": s.create,
            "FINISH": s.finish,
            "REAP": s.reap,
            "START": s.start,
            "NOTE": s.note_delivery,
            "store.count_delivery_attempt": s.count_delivery_attempt,
            "store.set_refs": s.set_refs,
            "store.set_refs_if_missing": s.set_refs_if_missing,
            "store.note_returned": s.note_returned,
            "store.synced": s.synced,
        }

    async def snapshot(self, hf_id: str) -> Snapshot | None:
        raw = await self.redis.hgetall(keys.human_function(hf_id))
        if not raw:
            return None
        fields = {field_name(text(k)): text(v) for k, v in raw.items()}
        self.seen_fields |= set(fields)
        attach = await self.redis.get(keys.attach(fields["fingerprint"]))
        unsynced = await self.redis.zscore(keys.UNSYNCED, hf_id) is not None
        return Snapshot(hf_id, fields, None if attach is None else text(attach), unsynced)

    async def run(self, writer: str, hf_id: str, *args: Any, **kwargs: Any) -> Step:
        """Run ``writer`` and record what it did to ``hf_id``'s hash."""
        before = await self.snapshot(hf_id)
        result = await self.writers()[writer](*args, **kwargs)
        after = await self.snapshot(hf_id)
        old = {} if before is None else before.fields
        new = {} if after is None else after.fields
        self.written.setdefault(writer, set()).update(k for k in new if old.get(k) != new[k])
        self.removed.setdefault(writer, set()).update(set(old) - set(new))
        return Step(writer, before, after, result)

    async def open(self, hf: HumanFunction, fingerprint: str = "fp", *, reason: str = REASON) -> None:
        await self.store.create(hf, fingerprint, reason, [], full_expire_reason=REASON)

    async def end(self, hf_id: str, outcome: Outcome, *, retain: bool = False) -> Step:
        return await self.run("FINISH", hf_id, hf_id, outcome, JOBS.update(hf_id, "slack"), retain=retain)

    async def end_approving(self, hf_id: str, approval: tuple[str, Approval]) -> Step:
        outcome = by_person(Action.ACCEPT, approval[1].at)
        return await self.run("FINISH", hf_id, hf_id, outcome, [], retain=True, approval=approval)


@dataclass(frozen=True)
class Step:
    writer: str
    before: Snapshot | None
    after: Snapshot | None
    result: Any


def make_hf(
    hf_id: str = "a1", deadline: float = NOW + 180, full_deadline: float | None = None
) -> HumanFunction:
    return HumanFunction(
        id=hf_id,
        requester="ada",
        owner="key:ada",
        channel="slack",
        message="Deploy?",
        request_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
        created_at=NOW,
        deadline=deadline,
        full_deadline=full_deadline,
        form_secret="s" * 32,
    )


def by_person(action: Action, at: float = NOW + 1) -> Outcome:
    status = {Action.ACCEPT: Status.ACCEPTED, Action.DECLINE: Status.DECLINED, Action.CANCEL: Status.CANCELED}
    content = {"ok": True} if action is Action.ACCEPT else None
    return Outcome(status=status[action], action=action, content=content, by="Ada", via="slack", at=at)


IDLE = make_hf(deadline=NOW + 60, full_deadline=NOW + 300)


async def open_(m: Machine) -> Step:
    return await m.run("CREATE", "a1", make_hf(), "fp", REASON, [])


async def open_idle(m: Machine) -> Step:
    return await m.run("CREATE", "a1", IDLE, "fp", IDLE_REASON, [], full_expire_reason=REASON)


async def re_attach(m: Machine) -> Step:
    await m.open(make_hf())
    step = await m.run("CREATE", "a1", make_hf("b2"), "fp", REASON, [])
    assert step.result[1] is Opened.ATTACHED and await m.snapshot("b2") is None
    return step


async def hand_out_kept(m: Machine) -> Step:
    await m.open(make_hf())
    await m.end("a1", by_person(Action.ACCEPT), retain=True)
    step = await m.run("CREATE", "a1", make_hf("b2"), "fp", REASON, [])
    assert step.result[1] is Opened.RETAINED and await m.snapshot("b2") is None
    return step


async def start(m: Machine) -> Step:
    await m.open(IDLE, reason=IDLE_REASON)
    step = await m.run("START", "a1", "a1")
    assert step.after is not None and step.after.fields["expire_reason"] == REASON
    return step


async def delivery_starts(m: Machine) -> Step:
    await m.open(make_hf())
    return await m.run("store.count_delivery_attempt", "a1", "a1")


async def delivery_posted(m: Machine) -> Step:
    await m.open(make_hf())
    await m.store.count_delivery_attempt("a1")
    return await m.run("store.set_refs", "a1", "a1", {"channel": "C1", "ts": "1.2"})


async def refs_from_callback(m: Machine) -> Step:
    await m.open(make_hf())
    return await m.run("store.set_refs_if_missing", "a1", "a1", {"channel": "C1", "ts": "1.2"})


async def delivery_failed(m: Machine) -> Step:
    await m.open(make_hf())
    return await m.run("NOTE", "a1", "a1", "delivery to slack failed (attempt 1): boom; retrying in 1 s")


async def note_cleared(m: Machine) -> Step:
    await m.open(make_hf())
    await m.store.note_delivery("a1", "boom")
    return await m.run("NOTE", "a1", "a1", None)


async def note_cleared_after_the_end(m: Machine) -> Step:
    await m.open(make_hf())
    await m.store.note_delivery("a1", "boom")
    await m.end("a1", by_person(Action.ACCEPT))
    return await m.run("NOTE", "a1", "a1", None)


def ending(action: Action, *, retain: bool) -> Callable[[Machine], Awaitable[Step]]:
    async def drive(m: Machine) -> Step:
        await m.open(make_hf())
        return await m.end("a1", by_person(action), retain=retain)

    return drive


async def withdraw(m: Machine) -> Step:
    await m.open(make_hf())
    withdrawn = Outcome(
        status=Status.CANCELED,
        action=Action.CANCEL,
        reason="Request canceled by the agent",
        via=AGENT_VIA,
        at=NOW + 1,
    )
    return await m.end("a1", withdrawn)


async def late_answer(m: Machine) -> Step:
    await m.open(make_hf(deadline=NOW + 10), reason="Request timed out after 10 seconds")
    step = await m.end("a1", by_person(Action.ACCEPT, at=NOW + 11), retain=True)
    assert step.after is not None
    ended = Outcome.model_validate_json(step.after.fields["outcome"])
    assert ended == expired_outcome("Request timed out after 10 seconds", NOW + 11)
    return step


async def waiting_deadline(m: Machine) -> Step:
    await m.open(make_hf())
    timed_out = expired_outcome(REASON, NOW + 180.5)
    step = await m.end("a1", timed_out)
    assert step.after is not None and step.after.fields["outcome"] == timed_out.model_dump_json()
    return step


async def answer_posted(m: Machine) -> Step:
    await m.open(make_hf())
    await m.store.count_delivery_attempt("a1")
    return await m.end("a1", by_person(Action.ACCEPT))


async def reaped(m: Machine) -> Step:
    await m.open(make_hf(deadline=NOW + 5))
    return await m.run("REAP", "a1", NOW + 10)


async def reaped_posted(m: Machine) -> Step:
    await m.open(make_hf(deadline=NOW + 5))
    await m.store.set_refs("a1", {"channel": "C1", "ts": "1.2"})
    return await m.run("REAP", "a1", NOW + 10)


async def result_returned(m: Machine) -> Step:
    await m.open(make_hf())
    await m.end("a1", by_person(Action.ACCEPT), retain=True)
    return await m.run("store.note_returned", "a1", ["a1"], [])


async def kept_given_back(m: Machine) -> Step:
    await m.open(make_hf())
    await m.end("a1", by_person(Action.ACCEPT), retain=True)
    await m.run("store.note_returned", "a1", ["a1"], [])
    return await m.run("store.note_returned", "a1", [], ["a1"])


TWO_APPROVALS = make_hf().model_copy(
    update={"approvers": ["slack:U1", "slack:U2"], "approvals_needed": 2, "on_timeout": "decline"}
)


def approval_by(user: str, at: float = NOW + 1) -> tuple[str, Approval]:
    by = {"channel": "slack", "id": user, "name": user.lower()}
    return f"slack:{user}", Approval(by=by, at=at, content={"ok": True})


async def open_counting(m: Machine) -> Step:
    return await m.run("CREATE", "a1", TWO_APPROVALS, "fp", REASON, [])


async def one_approval(m: Machine) -> Step:
    await m.open(TWO_APPROVALS)
    await m.store.count_delivery_attempt("a1")
    step = await m.run(
        "FINISH",
        "a1",
        "a1",
        by_person(Action.ACCEPT),
        JOBS.update("a1", "slack"),
        retain=True,
        approval=approval_by("U1"),
    )
    assert step.after is not None and not step.after.unsynced  # pending: no ending to show yet
    assert await m.redis.llen("rq:queue:humangate-slack") == 1  # but its post shows the count
    return step


async def approval_refused(m: Machine) -> Step:
    await m.open(TWO_APPROVALS)
    await m.store.finish("a1", by_person(Action.ACCEPT), [], retain=True, approval=approval_by("U1"))
    before = await m.snapshot("a1")
    with pytest.raises(ApprovalRefusedError, match="already approved"):
        await m.store.finish("a1", by_person(Action.ACCEPT), [], retain=True, approval=approval_by("U1"))
    with pytest.raises(ApprovalRefusedError) as out_of_turn:
        await m.store.finish("a1", by_person(Action.DECLINE), [], retain=True, turns=[0])
    assert out_of_turn.value.turn == 1
    after = await m.snapshot("a1")
    assert before == after
    return Step("FINISH", before, after, None)


async def last_approval(m: Machine) -> Step:
    await m.open(TWO_APPROVALS)
    await m.store.finish("a1", by_person(Action.ACCEPT), [], retain=True, approval=approval_by("U1"))
    step = await m.end_approving("a1", approval_by("U2", NOW + 2))
    assert step.after is not None
    ended = Outcome.model_validate_json(step.after.fields["outcome"])
    assert ended.approvals is not None and [a.by["id"] for a in ended.approvals] == ["U1", "U2"]
    return step


async def reaped_declining(m: Machine) -> Step:
    await m.open(TWO_APPROVALS.model_copy(update={"deadline": NOW + 5}), reason="No answer (policy p)")
    step = await m.run("REAP", "a1", NOW + 10)
    assert step.after is not None
    ended = Outcome.model_validate_json(step.after.fields["outcome"])
    assert (ended.status, ended.action, ended.reason) == (
        Status.EXPIRED,
        Action.DECLINE,
        "No answer (policy p)",
    )
    assert ended.approvals == []
    return step


async def message_updated(m: Machine) -> Step:
    await answer_posted(m)
    return await m.run("store.synced", "a1", "a1")


DRIVERS: dict[str, Callable[[Machine], Awaitable[Step]]] = {
    "open": open_,
    "open with an idle timeout": open_idle,
    "re-attach": re_attach,
    "hand out a kept result": hand_out_kept,
    "person starts answering": start,
    "delivery starts": delivery_starts,
    "delivery posted": delivery_posted,
    "references from a callback": refs_from_callback,
    "delivery failed": delivery_failed,
    "delivery note cleared": note_cleared,
    "delivery note cleared after the end": note_cleared_after_the_end,
    "answer": ending(Action.ACCEPT, retain=False),
    "answer, result kept": ending(Action.ACCEPT, retain=True),
    "decline": ending(Action.DECLINE, retain=True),
    "person cancels": ending(Action.CANCEL, retain=True),
    "agent withdraws": withdraw,
    "answer after the deadline": late_answer,
    "waiting call's deadline": waiting_deadline,
    "answer to a posted request": answer_posted,
    "open, counting approvals": open_counting,
    "one approval of several": one_approval,
    "approval refused": approval_refused,
    "last approval": last_approval,
    "reaped, declining": reaped_declining,
    "reaped": reaped,
    "reaped, posted": reaped_posted,
    "result returned": result_returned,
    "kept result given back": kept_given_back,
    "message updated": message_updated,
}
"""One way to make each documented transition happen, by its name in the doc."""

TRANSITIONS = table("Transitions")


@pytest.fixture
async def machine(redis_url: str) -> AsyncIterator[Machine]:
    redis = Redis.from_url(redis_url)
    yield Machine(HumanFunctionStore(redis, retention=600))
    await redis.aclose()


def test_every_documented_transition_has_a_driver_and_every_sub_state_a_reading() -> None:
    assert [row["Transition"] for row in TRANSITIONS] == list(DRIVERS)
    assert [row["Sub-state"] for row in table("Sub-states")] == list(SUB_STATES)
    assert {row["Status"].strip("`") for row in table("States")} == {s.value for s in Status}


@pytest.mark.parametrize("row", TRANSITIONS, ids=[row["Transition"] for row in TRANSITIONS])
async def test_each_documented_transition_happens(machine: Machine, row: dict[str, str]) -> None:
    step = await DRIVERS[row["Transition"]](machine)
    assert names(row["Made by"]) == {step.writer}
    check_state(row["From"], step.before)
    check_state(row["To"], step.after)


async def test_the_documented_fields_are_exactly_the_fields_written(machine: Machine) -> None:
    for drive in DRIVERS.values():
        await machine.redis.flushdb()
        await drive(machine)
    documented = table("Hash fields")
    assert machine.seen_fields == {row["Field"].strip("`") for row in documented}
    for writer in machine.writers():
        set_by = {row["Field"].strip("`") for row in documented if writer in names(row["Set by"])}
        removed_by = {row["Field"].strip("`") for row in documented if writer in names(row["Removed by"])}
        assert (machine.written.get(writer, set()), writer) == (set_by, writer)
        assert (machine.removed.get(writer, set()), writer) == (removed_by, writer)


def test_every_key_is_documented_as_it_is_built() -> None:
    """Both key tables name each key as ``| `hg:hf:{<id>}` (`human_function`)``."""
    found = re.findall(r"\| `([^`]+)` \(`(\w+)`\)", DOC.read_text())
    documented = {builder: pattern for pattern, builder in found}
    built: dict[str, str] = {}
    for name, value in vars(keys).items():
        if inspect.isfunction(value) and value.__module__ == keys.__name__:
            built[name] = value(*["X"] * len(inspect.signature(value).parameters))
        elif isinstance(value, str) and name.isupper() and not name.endswith("PREFIX"):
            built[name] = value
    assert {name: re.sub(r"<[^>]+>", "X", pattern) for name, pattern in documented.items()} == built


@pytest.mark.parametrize("name", ["CREATE", "FINISH", "REAP", "NOTE", "START"])
def test_every_script_takes_one_json_object(name: str) -> None:
    """Arguments come as one decoded JSON object; only recorded RQ commands follow it (ARGV[2..])."""
    script = getattr(scripts, name)
    assert "local a = cjson.decode(ARGV[1])" in script
    assert set(re.findall(r"ARGV\[(\d+)\]", script)) == {"1"}
    assert set(re.findall(r"run_commands\(ARGV, (\d+)\)", script)) <= {"2"}
