"""What an inline button of humangate's carries: ``callback_data``, an opaque token of at most 64
bytes (Telegram's limit) naming the request and what the button does, never an answer's value or
the request's form secret: ``hg:<hf id>:<code>[<index>]`` (``hg:0123456789abcdef:c2``, 23 bytes).

Codes: ``a`` Approve, ``d`` Decline, ``r`` Respond, ``c<i>`` choose option ``i`` of a lone single
choice; and in a conversation (``channels.telegram.conversation``): ``t`` / ``f`` yes / no, ``o<i>``
option ``i``, ``m<i>`` toggle option ``i`` of a multiple choice, ``k`` done choosing, ``s`` skip,
``S`` submit, ``x`` cancel, ``n`` no reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "hg"
APPROVE, DECLINE, RESPOND, CHOOSE = "a", "d", "r", "c"
YES, NO, OPTION, TOGGLE, DONE, SKIP, SUBMIT, CANCEL, NO_REASON = "t", "f", "o", "m", "k", "s", "S", "x", "n"
ON_REQUEST = frozenset({APPROVE, DECLINE, RESPOND, CHOOSE})
"""Codes of the buttons on the request's own message (a tap on one locates the post)."""

MAX_DATA_BYTES = 64
"""Telegram's limit of ``callback_data``."""

_DATA = re.compile(r"hg:([0-9a-f]{16}):([adrctfomksSxn])([0-9]{0,6})")


@dataclass(frozen=True, slots=True)
class Tap:
    """A button of humangate's, read back from its ``callback_data``."""

    hf_id: str
    code: str
    index: int | None = None


def callback_data(hf_id: str, code: str, index: int | None = None) -> str:
    """The ``callback_data`` of a button (``Tap`` reads it back)."""
    data = f"{PREFIX}:{hf_id}:{code}{'' if index is None else index}"
    if len(data.encode()) > MAX_DATA_BYTES:
        raise ValueError(f"callback_data of {len(data.encode())} bytes is over Telegram's {MAX_DATA_BYTES}")
    return data


def button(text: str, hf_id: str, code: str, index: int | None = None) -> dict[str, str]:
    """An inline keyboard button."""
    return {"text": text, "callback_data": callback_data(hf_id, code, index)}


def read_tap(data: object) -> Tap | None:
    """The button a ``callback_data`` names, or ``None`` for anything humangate never sent."""
    if not isinstance(data, str):
        return None
    match = _DATA.fullmatch(data)
    if match is None:
        return None
    hf_id, code, index = match.groups()
    return Tap(hf_id, code, int(index) if index else None)
