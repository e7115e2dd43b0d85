"""The schedules a static program keeps between runs (static_run.py):
idle ones per key (the input signature, where the outputs go, and the
inputs a captured replay reads where they are), the least recently used
key dropped first.  A captured schedule that lends its outputs
(``Device.lend``) is taken again only once the caller has let go of them."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ..target import Device
from .static_planner import StagedBuffer

SIGNATURES_KEPT = 4
"""Schedules kept per executable (one per input signature, least recently
used dropped first)."""

LENDING_SCHEDULES = 2
"""Captured schedules per input signature that lend their outputs' memory
to the caller (``Device.lend``) instead of copying them out: a loop
``y = exe(x)`` holds the previous call's outputs while it makes the next,
so two take turns.  When every one of them is still lent, a run takes a
schedule that copies its outputs."""


READ_IN_PLACE_WITHIN = 2
"""Calls: an array on the device passed again within this many calls (the
same array each call, or two taking turns) is read in place by a captured
replay of its own (``Device.held``); others are copied into the replay's
input buffer, so that a loop over fresh arrays captures nothing new."""


class SchedulePool:
    """Idle schedules of one executable's plan, by key."""

    def __init__(self, resident: Device | None, captured: Device | None):
        self.resident, self.captured = resident, captured
        self._lock = threading.Lock()
        self._idle: OrderedDict[tuple, list] = OrderedDict()
        self._recent_held: list[dict[str, Any]] = []
        """The keys of the last runs' inputs on the device (Device.held),
        the newest first."""

    def idle(self) -> list:
        """The schedules not running now, most recently used key last."""
        with self._lock:
            return [schedule for kept in self._idle.values() for schedule in kept]

    def key(self, inputs: dict[str, Any], device_outputs: bool) -> tuple[tuple, dict[str, Any]]:
        """(the key of a run on ``inputs``, the buffers over the inputs a
        captured replay reads where they are)."""
        held = self._held_again(inputs) if self.captured is not None else {}
        key = (signature(inputs), device_outputs,
               tuple(sorted((name, identity) for name, (identity, _) in held.items())))
        return key, {name: buffer for name, (_, buffer) in held.items()}

    @staticmethod
    def held_identities(key: tuple) -> dict[str, Any]:
        """Input name -> ``Device.held`` key of the inputs a run under
        ``key`` reads in place."""
        return dict(key[2])

    def take(self, key: tuple) -> tuple[Any, bool]:
        """An idle schedule for ``key``: one that lends its outputs and has
        them back, else one that copies them; or None and whether a new one
        should lend its outputs."""
        with self._lock:
            idle = self._idle.get(key, [])
            # lending ones oldest first: a loop holds the outputs of the newest
            pick = next((s for s in idle if s.lends and not s.busy()), None) or \
                next((s for s in reversed(idle) if not s.lends), None)
            if pick is not None:
                self._idle.move_to_end(key)
                idle.remove(pick)
                return pick, pick.lends
            lending = key[1] and self.captured is not None and len(idle) < LENDING_SCHEDULES
            return None, lending

    def give_back(self, key: tuple, schedule) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(schedule)
            self._idle.move_to_end(key)
            while len(self._idle) > SIGNATURES_KEPT:
                self._idle.popitem(last=False)

    def _held_again(self, inputs: dict[str, Any]) -> dict[str, tuple]:
        """The inputs on the device that are the same arrays as in one of the
        last READ_IN_PLACE_WITHIN runs (``Device.held``: name -> (key,
        buffer)), which a captured replay reads where they are: a caller
        passing one array again, refilled between runs, or two taking
        turns, is spared a copy per run."""
        held = {}
        for name, value in inputs.items():
            if isinstance(value, StagedBuffer):
                found = self.resident.held(value.handle)
                if found is not None:
                    held[name] = found
        recent = self._recent_held
        self._recent_held = [{name: key for name, (key, _) in held.items()}] + \
            recent[:READ_IN_PLACE_WITHIN - 1]
        return {name: found for name, found in held.items()
                if any(keys.get(name) == found[0] for keys in recent)}


def signature(inputs: dict[str, Any]) -> tuple:
    """What a schedule depends on: array shapes and integer scalars (they
    may be sizes).  Float scalars only change the launches' arguments."""
    parts = []
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            parts.append((name, value.shape))
        elif isinstance(value, StagedBuffer):
            parts.append((name, value.shape, "staged"))
        elif isinstance(value, (np.integer, np.bool_, int)):
            parts.append((name, int(value)))
    return tuple(sorted(parts))
