"""The slots `run_tests` runs in: at most a few runs at once, server-wide, and at most half of them per visitor.

A run waits for a free slot, first come first served among the visitors under their share, a bounded
time (`Limits.slot_wait_seconds`), then is refused with a message that says why: the slots were busy,
or this visitor already holds their share.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field

from ..settings import load_settings
from .workspace import ToolRefusal


@dataclass
class SlotStatus:
    total: int
    busy: int
    waiting: int

    def words(self) -> str:
        text = f"{self.busy} of {self.total} run_tests slots busy"
        if self.busy >= self.total:
            text += f"; a run waits for a free slot ({self.waiting} waiting)"
        return text + "."


def visitor_share(total: int) -> int:
    """How many slots one visitor may hold at once: half of them, rounded up (one of one)."""
    return max(1, (total + 1) // 2)


@dataclass
class _Slots:
    total: int
    free: list[int] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)  # slots each visitor holds now
    queue: list[tuple[object, str | None]] = field(default_factory=list)  # (ticket, visitor), first come first
    condition: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self):
        self.free = list(range(self.total))

    def next_in_line(self) -> object | None:
        """The first waiting ticket whose visitor is under their share (an unnamed visitor always is)."""
        share = visitor_share(self.total)
        return next(
            (ticket for ticket, visitor in self.queue if visitor is None or self.held.get(visitor, 0) < share), None
        )


_SLOTS: list[_Slots] = []
_SLOTS_LOCK = threading.Lock()


def slot_count() -> int:
    return load_settings().sandbox_slots


def _slots() -> _Slots:
    with _SLOTS_LOCK:
        if not _SLOTS:
            _SLOTS.append(_Slots(slot_count()))
        return _SLOTS[0]


def slot_status() -> SlotStatus:
    """How many runs go now and how many wait for a free slot (for the playground to show)."""
    slots = _slots()
    with slots.condition:
        return SlotStatus(slots.total, slots.total - len(slots.free), len(slots.queue))


@contextlib.contextmanager
def take_slot(visitor: str | None = None, wait_seconds: float = 10.0):
    """A free slot's number and whether it waited for one; a ToolRefusal after `wait_seconds` without one.

    A visitor (a page session's id; None: unnamed) holds at most `visitor_share` slots at once, so one
    visitor's runs never hold them all; the waiting runs are served first come, first served among
    those whose visitor is under the share."""
    slots = _slots()
    ticket = object()
    with slots.condition:
        slots.queue.append((ticket, visitor))
        deadline = time.monotonic() + wait_seconds
        waited = False
        try:
            while not (slots.free and slots.next_in_line() is ticket):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ToolRefusal(_busy_words(slots, visitor, wait_seconds))
                waited = True
                slots.condition.wait(left)
        finally:
            slots.queue.remove(next(entry for entry in slots.queue if entry[0] is ticket))
            slots.condition.notify_all()  # the runs behind this one may be next in line now
        slot = slots.free.pop(0)
        if visitor is not None:
            slots.held[visitor] = slots.held.get(visitor, 0) + 1
    try:
        yield slot, waited
    finally:
        with slots.condition:
            slots.free.append(slot)
            if visitor is not None:
                slots.held[visitor] -= 1
                if not slots.held[visitor]:
                    del slots.held[visitor]
            slots.condition.notify_all()


def _busy_words(slots: _Slots, visitor: str | None, wait_seconds: float) -> str:
    share = visitor_share(slots.total)
    if visitor is not None and slots.held.get(visitor, 0) >= share:
        return (
            f"error: you already have {share} run_tests going, the most one visitor may have at once "
            f"({share} of {slots.total}); run this again when one has finished"
        )
    return (
        f"error: all {slots.total} run_tests slots stayed busy for {wait_seconds:g} s (other visitors' tests); "
        "run it again in a moment"
    )
