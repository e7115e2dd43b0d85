"""A call passing the very objects of a recent call, unchanged, taken as
that call took them (static_run.py).

A loop calling an executable on the same arrays (a CUDA tensor refilled
between calls, numpy arrays rewritten in place) would repeat at every call
checks whose answers cannot have changed: the inputs' names, types, shapes
and dtypes, which device takes each array, which kept schedule runs them
and which arrays its captured replay reads where they are.  A call's
answers are kept with what they depend on, and reused while that is
unchanged:

- a numpy array: the same object, of the same shape and dtype, still dense
  and writeable (it is copied in, or read, at every run);
- a scalar: the same object (numbers are immutable);
- an array on the resident device: the same object, taken by the device
  again (``Device.adopt``) as a buffer of the same shape and dtype; where
  the replay reads it in place, with the ``Device.held`` key the schedule
  was keyed by (the same memory and layout).

The last few calls are kept (RECENT_CALLS), by their inputs' identities,
so that arrays taking turns are recognised too.  A call on the very
objects of one of the last READ_IN_PLACE_WITHIN calls is not taken from a
kept call that copied an array in: it is checked in full, so that the
schedule reads the array in place from then on (``SchedulePool.key``).

The caller's arrays are known by weak references: keeping the answers
keeps no array alive.  Anything else (a staged Value, a host array copied
on the way in, an array type without weak references) makes a call that
is not kept.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Mapping

import numpy as np

from ..target import ArrayRefused, Device
from .memory import Value
from .schedule_pool import READ_IN_PLACE_WITHIN, SchedulePool
from .static_planner import StagedBuffer

RECENT_CALLS = 4
"""Calls kept per executable (by their inputs' identities)."""


class RecentCalls:
    """The last calls of one static program that can be recognised again."""

    def __init__(self):
        self._lock = threading.Lock()  # calls from several threads at once
        self._calls: dict[tuple, RepeatCall] = {}
        self._lately: list[tuple] = []
        """The identities of the last calls' inputs, the newest first."""

    def __len__(self) -> int:
        return len(self._calls)

    def taken(self, given: Mapping[str, Any], outputs: str) -> "tuple[RepeatCall, dict] | None":
        """(the kept call that ``given`` repeats, the inputs as its schedule
        takes them); None where it repeats none."""
        identities = tuple(map(id, given.values()))
        with self._lock:
            self._lately = [identities] + self._lately[:READ_IN_PLACE_WITHIN]
            again = identities in self._lately[1:]
            repeat = self._calls.get(identities)
        if repeat is None or (again and repeat.could_hold):
            return None
        taken = repeat.taken(given, outputs)
        return None if taken is None else (repeat, taken)

    def keep(self, given: Mapping[str, Any], repeat: "RepeatCall | None") -> None:
        """Keep the call on ``given`` (that :meth:`taken` did not find) as
        ``repeat``, or forget it where that is None."""
        identities = tuple(map(id, given.values()))
        with self._lock:
            if not self._lately:  # the first call: not offered to taken
                self._lately = [identities]
            if repeat is None:
                self._calls.pop(identities, None)
                return
            self._calls[identities] = repeat
            while len(self._calls) > RECENT_CALLS:
                self._calls.pop(next(iter(self._calls)))


class RepeatCall:
    """The answers of one call, and what they depend on."""

    __slots__ = ("outputs", "key", "held", "device", "could_hold", "_taken", "_count", "_arrays",
                 "_scalars", "_on_device", "_staged")

    def __init__(self, outputs: str, checked: dict[str, Any], key: tuple,
                 held: dict[str, Any], device: Device | None):
        self.outputs, self.key, self.held = outputs, key, held
        self.device = device
        self.could_hold = False
        """Whether an array on the device is copied in that the replay
        would read in place were it passed in two calls running."""
        self._taken = {name: value for name, value in checked.items()
                       if type(value) is not np.ndarray and not isinstance(value, StagedBuffer)}
        """The checked scalars (taken as they were)."""
        self._count = 0
        self._arrays: list[tuple[str, weakref.ref, tuple]] = []
        self._scalars: list[tuple[str, Any]] = []
        self._on_device: list[tuple[str, weakref.ref, Any, tuple, np.dtype]] = []
        """(name, the caller's array, its held key or None where it is
        copied in, shape, dtype)."""
        self._staged: dict[int, StagedBuffer] = {}
        """The last buffer each of those arrays was taken as, by its
        identity (alive while the call is kept: the array is one of its
        inputs)."""

    @classmethod
    def of(cls, given: Mapping[str, Any], checked: dict[str, Any], outputs: str, key: tuple,
           held: dict[str, Any], device: Device | None,
           captured: bool) -> "RepeatCall | None":
        """The call on the caller's ``given`` inputs, run as ``checked``
        under ``key`` with ``held`` inputs read in place (``captured``: by
        a replay, which may read others in place later); None where one of
        its inputs cannot be recognised again (module docstring)."""
        repeat = cls(outputs, checked, key, held, device)
        repeat._count = len(given)
        identities = SchedulePool.held_identities(key)
        for name, value in given.items():
            taken = checked.get(name)
            if isinstance(value, Value):
                return None
            if isinstance(taken, StagedBuffer):
                try:
                    array = weakref.ref(value)
                except TypeError:  # an array type without weak references
                    return None
                if captured and name not in held and device.held(taken.handle) is not None:
                    repeat.could_hold = True
                repeat._on_device.append((name, array, identities.get(name), taken.shape,
                                          taken.dtype))
            elif type(value) is np.ndarray:
                if taken is not value:
                    return None
                repeat._arrays.append((name, weakref.ref(value), _array_state(value)))
            elif isinstance(value, (bool, int, float, np.generic)):
                repeat._scalars.append((name, value))
            else:
                return None
        return repeat

    def taken(self, given: Mapping[str, Any], outputs: str) -> dict[str, Any] | None:
        """The inputs of a call on ``given`` as the schedule takes them,
        where the call is this one again; None otherwise."""
        if outputs != self.outputs or len(given) != self._count:
            return None
        for name, value in self._scalars:
            if given.get(name) is not value:
                return None
        taken = dict(self._taken)
        for name, array, state in self._arrays:
            value = given.get(name)
            if value is None or value is not array() or _array_state(value) != state:
                return None
            taken[name] = value
        for name, array, identity, shape, dtype in self._on_device:
            value = given.get(name)
            if value is None or value is not array():
                return None
            buffer = self._adopted(value, identity, shape, dtype)
            if buffer is None:
                return None
            taken[name] = buffer
        return taken

    def _adopted(self, array: Any, identity: Any, shape: tuple,
                 dtype: np.dtype) -> StagedBuffer | None:
        """``array`` taken by the device again as a buffer of ``shape`` and
        ``dtype`` (with the held key ``identity``, unless None); None where
        it is not."""
        try:
            adopted = self.device.adopt(array)
        except ArrayRefused:  # the full check says why
            return None
        if adopted is None:
            return None
        handle, taken_shape, taken_dtype = adopted
        if taken_shape != shape and tuple(taken_shape) != shape \
                or taken_dtype != dtype and np.dtype(taken_dtype) != dtype:
            return None
        if identity is not None:
            found = self.device.held(handle)
            if found is None or found[0] != identity:
                return None
        staged = self._staged.get(id(array))
        if staged is None or staged.handle is not handle:
            staged = self._staged[id(array)] = StagedBuffer(handle, shape, dtype)
        return staged


def _array_state(array: np.ndarray) -> tuple:
    flags = array.flags
    return array.shape, array.dtype, flags.c_contiguous, flags.writeable
