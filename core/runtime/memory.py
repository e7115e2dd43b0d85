"""The memory tracker: where the newest copy of every buffer lives.

Every value flowing through the program (a root input, a node's output) is
a :class:`Value`.  It may have valid copies in several places: ``"host"``
(a numpy array; also the place of every device with ``host_memory``) and
any device.  A consumer asks for the value *on its device*; the tracker
copies only if no valid copy is there yet, and counts the bytes.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..target import Device

HOST = "host"
ALWAYS = 1 << 30
"""The consumers of a value no run frees: inputs staged for many runs, or
taken from the caller's device arrays."""


@dataclass
class Value:
    shape: tuple[int, ...]
    dtype: np.dtype
    copies: dict[str, Any] = field(default_factory=dict)
    consumers: int = 0
    """Consumers that have not finished with the value yet."""
    pinned: bool = False
    """Never updated in place (user arrays, inputs reused across frames)."""

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class CopyStats:
    """Bytes a node caused to move."""

    to_device: int = 0
    to_host: int = 0

    @property
    def total(self) -> int:
        return self.to_device + self.to_host


class MemoryTracker:
    """Tracks values across the host and the devices of one execution."""

    def __init__(self, devices: dict[str, Device]):
        self._places = {name: (HOST if d.host_memory else name) for name, d in devices.items()}
        self._devices = {name: d for name, d in devices.items() if not d.host_memory}
        self._lock = threading.RLock()
        self.bytes_copied = 0

    def place_of(self, device_name: str) -> str:
        return self._places[device_name]

    def from_host(self, array: np.ndarray, consumers: int, pinned: bool = True) -> Value:
        return Value(array.shape, array.dtype, {HOST: array}, consumers, pinned)

    def produced(self, device_name: str, handle, shape, dtype, consumers: int) -> Value:
        return Value(tuple(shape), np.dtype(dtype), {self.place_of(device_name): handle}, consumers)

    def acquire(self, value: Value, device_name: str, stats: CopyStats) -> Any:
        """A handle of ``value`` valid on ``device_name``, copying if needed."""
        place = self.place_of(device_name)
        with self._lock:
            if place in value.copies:
                return value.copies[place]
            host = self._host_copy(value, stats)
            if place == HOST:
                return host
            device = self._devices[place]
            handle = device.allocate(value.shape, value.dtype)
            device.copy_in(handle, host)
            value.copies[place] = handle
            self._count(stats, value.nbytes, to_device=True)
            return handle

    def acquire_for_update(self, value: Value, device_name: str, stats: CopyStats) -> Any:
        """A handle the caller may overwrite: the value's own copy when no
        one else needs the value any more, else a private duplicate."""
        handle = self.acquire(value, device_name, stats)
        place = self.place_of(device_name)
        with self._lock:
            if value.pinned or value.consumers > 1:
                if place == HOST:
                    return np.array(handle, copy=True)
                return self._devices[place].duplicate(handle, value.shape, value.dtype)
            # Ownership moves to the caller: the value is dead after this use.
            value.copies.pop(place, None)
            self._free_copies(value)
            return handle

    def export(self, value: Value, handed_over: bool) -> Any | None:
        """``value`` as the array type of the device that made it (outputs
        left on the device: ``Device.export``); ``handed_over``: the caller
        is its last reader, so the device's own copy is handed over, else a
        duplicate is.  None where the value was made in host memory, or its
        device has no array type of its own."""
        with self._lock:
            if not value.copies:
                return None
            place, handle = next(iter(value.copies.items()))  # the first: its maker's
            if place == HOST:
                return None
            device = self._devices[place]
            if not handed_over:
                handle = device.duplicate(handle, value.shape, value.dtype)
            array = device.export(handle)
            if array is None:
                if not handed_over:
                    device.free(handle)
            elif handed_over:
                value.copies.pop(place)  # the caller's now: never freed here
            return array

    def to_host(self, value: Value, stats: CopyStats) -> np.ndarray:
        with self._lock:
            return self._host_copy(value, stats)

    def release(self, value: Value) -> None:
        """One consumer is done; the last one frees the device copies."""
        with self._lock:
            value.consumers -= 1
            if value.consumers > 0 or value.pinned:
                return
            self._free_copies(value)

    def discard(self, value: Value) -> None:
        """Free a value no one will read."""
        with self._lock:
            self._free_copies(value)

    def _free_copies(self, value: Value) -> None:
        for place, handle in value.copies.items():
            if place != HOST:
                self._devices[place].free(handle)
        value.copies.clear()

    def _host_copy(self, value: Value, stats: CopyStats) -> np.ndarray:
        if HOST in value.copies:
            return value.copies[HOST]
        place, handle = next(iter(value.copies.items()))
        array = np.asarray(self._devices[place].copy_out(handle)).reshape(value.shape)
        value.copies[HOST] = array
        self._count(stats, value.nbytes, to_device=False)
        return array

    def _count(self, stats: CopyStats, nbytes: int, to_device: bool) -> None:
        if to_device:
            stats.to_device += nbytes
        else:
            stats.to_host += nbytes
        self.bytes_copied += nbytes
