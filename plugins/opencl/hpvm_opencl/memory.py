"""Device memory of 'gpu_opencl': buffers, copies, and pyopencl arrays
taken or handed out as they are (a mixin of OpenCLDevice, device.py).

A handle is a :class:`DeviceBuffer`: a ``cl.Buffer`` with its shape and
dtype, and, where launches are asynchronous, the events of its last
writer and of its readers since, which a copy waits for first
(``settled``).  Fills and device-to-device copies go to the device's
in-order queue and, with task parallelism, finish before they return (a
kernel queue may use the buffer next); reads back to the host are
blocking, and so is ``copy_in`` (the caller may reuse its array).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpvm.target import ArrayRefused

from .arrays import pyopencl_array
from .narrowing import NARROW_SIZE
from .program import NARROW_ELEMENTS


@dataclass
class DeviceBuffer:
    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    writer: Any = None
    """asynchronous: the event of the last command writing it."""
    readers: list = field(default_factory=list)
    """asynchronous: events of the kernels reading it since."""
    narrow: bool = field(init=False)
    """Whether kernels index it in ``int`` (program.NARROW_ELEMENTS,
    NARROW_SIZE)."""

    def __post_init__(self):
        self.narrow = math.prod(self.shape) <= NARROW_ELEMENTS \
            and all(n <= NARROW_SIZE for n in self.shape)

    def settled(self) -> None:
        """Wait until every command using it is done (before the host
        reads or overwrites it)."""
        for event in [self.writer, *self.readers]:
            if event is not None:
                event.wait()

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class DeviceMemory:
    """Buffers and copies of an OpenCLDevice, which supplies ``runtime``
    (devices.DeviceRuntime), ``transfers``, ``host_arrays`` (an
    OutputPool), ``task_parallelism``, ``asynchronous`` and ``_adoptions``."""

    def allocate(self, shape, dtype) -> DeviceBuffer:
        handle = self._new_buffer(shape, dtype)
        if handle.nbytes:
            import pyopencl as cl
            cl.enqueue_fill_buffer(self.runtime.queue, handle.buffer, np.uint8(0), 0, handle.nbytes)
            if self.task_parallelism:
                self.runtime.queue.finish()   # before a kernel queue uses it
        return handle

    def _new_buffer(self, shape, dtype, pooled: bool = True) -> DeviceBuffer:
        """A buffer of ``shape`` and ``dtype``; ``pooled``: from the device's
        memory pool (devices.DeviceRuntime.pool), for buffers the runtime
        frees (``free``), not for those dropped while a launch may still
        use them."""
        import pyopencl as cl
        shape, dtype = tuple(int(s) for s in shape), np.dtype(dtype)
        nbytes = max(math.prod(shape) * dtype.itemsize, 1)
        buffer = self.runtime.pool.allocate(nbytes) if pooled else \
            cl.Buffer(self.runtime.context, cl.mem_flags.READ_WRITE, nbytes)
        return DeviceBuffer(buffer, shape, dtype)

    def copy_in(self, handle: DeviceBuffer, array) -> None:
        data = np.ascontiguousarray(np.broadcast_to(array, handle.shape), dtype=handle.dtype)
        if handle.nbytes:
            handle.settled()
            self.transfers.to_device(handle.buffer, data)

    def copy_out(self, handle: DeviceBuffer) -> np.ndarray:
        array = self.host_arrays.empty(handle.shape, handle.dtype)
        if handle.nbytes:
            handle.settled()
            self.transfers.to_host(handle.buffer, array)
        return array

    def duplicate(self, handle: DeviceBuffer, shape, dtype) -> DeviceBuffer:
        import pyopencl as cl
        copy = self._new_buffer(shape, dtype)
        if copy.nbytes:
            handle.settled()
            cl.enqueue_copy(self.runtime.queue, copy.buffer, handle.buffer, byte_count=copy.nbytes)
            if self.task_parallelism:
                self.runtime.queue.finish()
        return copy

    def free(self, handle: DeviceBuffer) -> None:
        if self.asynchronous:
            handle.settled()  # its memory may be handed out again at once
        handle.buffer.release()
        self.runtime.trim_pool()

    def empty(self, shape, dtype) -> DeviceBuffer:
        return self._new_buffer(shape, dtype)

    def copy_buffer(self, to: DeviceBuffer, source: DeviceBuffer) -> None:
        import pyopencl as cl
        if to.nbytes:
            source.settled()
            to.settled()
            cl.enqueue_copy(self.runtime.queue, to.buffer, source.buffer, byte_count=to.nbytes)
            self.runtime.queue.finish()

    # -- arrays of pyopencl (device_arrays.py) ------------------------------
    def adopt(self, array) -> tuple[DeviceBuffer, tuple[int, ...], np.dtype] | None:
        """A ``pyopencl.array.Array`` of this device's context, dense from
        the start of its buffer, taken as it is (its pending events waited
        for first)."""
        cl_array = sys.modules.get("pyopencl.array")
        if cl_array is None or not isinstance(array, cl_array.Array):
            return None  # a program that made none has none to pass
        handle = self._adoptions.get(array)
        if handle is None:
            handle = self._adopted(array)
            self._adoptions.keep(array, handle)
        array.finish()
        return handle, handle.shape, handle.dtype

    def _adopted(self, array) -> DeviceBuffer:
        """A pyopencl array, checked, as a DeviceBuffer over its buffer."""
        if array.context is not self.runtime.context and array.context != self.runtime.context:
            raise ArrayRefused(
                "got a pyopencl array of another OpenCL context (on "
                f"{array.context.devices[0].name}), not of this executable's "
                f"({self.runtime.info.name})",
                "make it with exe.device_array(x), or in exe.device_array's context "
                "(exe.device_array(x).context)")
        if not array.flags.c_contiguous or array.offset:
            raise ArrayRefused("got a pyopencl array that is not dense from the start of its "
                               "buffer (a strided view or an offset slice)",
                               "pass array.copy(), which is")
        return DeviceBuffer(array.base_data, tuple(array.shape), np.dtype(array.dtype))

    def export(self, handle: DeviceBuffer):
        """The buffer as a ``pyopencl.array.Array`` on this device's queue
        (waiting for its last writer, where launches are asynchronous)."""
        events = [handle.writer] if handle.writer is not None else None
        return pyopencl_array(self.runtime.queue, handle, events)
