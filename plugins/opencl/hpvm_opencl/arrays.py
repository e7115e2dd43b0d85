"""pyopencl arrays over the device's buffers (outputs left on the device,
hpvm.runtime.device_arrays)."""
from __future__ import annotations

import math


def pyopencl_array(queue, handle, events: list | None):
    """A ``pyopencl.array.Array`` over the buffer of ``handle`` (a
    DeviceBuffer), through the constructor pyopencl's own
    ``_new_with_changes`` uses (no checks of the shape: the checked one
    cost 30-60 us, a third of a small call's host time on the lent H200);
    the checked one for an empty buffer or a pyopencl without it."""
    import pyopencl.array as cl_array
    if handle.nbytes:
        strides, stride = [], handle.dtype.itemsize
        for size in reversed(handle.shape):
            strides.append(stride)
            stride *= max(size, 1)
        try:
            return cl_array.Array(None, handle.shape, handle.dtype, data=handle.buffer,
                                  strides=tuple(reversed(strides)), events=events, _fast=True,
                                  _size=math.prod(handle.shape), _context=queue.context,
                                  _queue=queue)
        except TypeError:  # a pyopencl without the fast constructor
            pass
    return cl_array.Array(queue, handle.shape, handle.dtype,
                          data=handle.buffer if handle.nbytes else None, events=events)
