"""pyopencl arrays over the device's buffers (outputs left on the device,
hpvm.runtime.device_arrays)."""
from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Any


def pyopencl_array(queue, handle, events: list | None):
    """A ``pyopencl.array.Array`` over the buffer of ``handle`` (a
    DeviceBuffer), through the constructor pyopencl's own
    ``_new_with_changes`` uses (no checks of the shape: the checked one
    cost 30-60 us, a third of a small call's host time on the lent H200);
    the checked one for an empty buffer or a pyopencl without it."""
    import pyopencl.array as cl_array
    if handle.nbytes:
        try:
            return cl_array.Array(None, handle.shape, handle.dtype, data=handle.buffer,
                                  strides=dense_strides(handle.shape, handle.dtype.itemsize),
                                  events=events, _fast=True,
                                  _size=math.prod(handle.shape), _context=queue.context,
                                  _queue=queue)
        except TypeError:  # a pyopencl without the fast constructor
            pass
    return cl_array.Array(queue, handle.shape, handle.dtype,
                          data=handle.buffer if handle.nbytes else None, events=events)


@functools.lru_cache(maxsize=256)
def dense_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides (bytes) of a dense row-major array of ``shape``."""
    strides, stride = [], itemsize
    for size in reversed(shape):
        strides.append(stride)
        stride *= max(size, 1)
    return tuple(reversed(strides))


class Adoptions:
    """The DeviceBuffer each recently adopted pyopencl array was taken as
    (``OpenCLDevice.adopt``), by the array's identity: a loop passing the
    same arrays call after call gets the same DeviceBuffer back without
    checking again what does not change once an array is made (its
    context, buffer, offset, shape and strides).  Arrays are known by weak
    references; the last KEPT are kept."""

    KEPT = 64

    def __init__(self):
        self._taken: dict[int, tuple[weakref.ref, Any]] = {}
        self._lock = threading.Lock()

    def get(self, array) -> Any:
        """The DeviceBuffer ``array`` was taken as, or None."""
        found = self._taken.get(id(array))
        if found is None or found[0]() is not array:
            return None
        handle = found[1]
        return handle if array.base_data is handle.buffer else None

    def keep(self, array, handle) -> None:
        """Remember that ``array`` was taken as ``handle``."""
        try:
            ref = weakref.ref(array)
        except TypeError:  # an array type without weak references
            return
        with self._lock:
            taken = self._taken
            taken.pop(id(array), None)
            taken[id(array)] = (ref, handle)
            while len(taken) > self.KEPT:
                del taken[next(iter(taken))]
