"""Moving arrays between host memory and device buffers.

Three ways, chosen with the option ``transfer``:

- ``copy``: ``clEnqueueCopy`` straight from/to the numpy array (pageable
  memory: the driver stages it itself);
- ``map``: map the device buffer into host memory and copy with numpy
  (zero-copy on CPU devices; pinned staging inside the driver on GPUs);
- ``pinned``: through a reusable host buffer allocated by the driver
  (``CL_MEM_ALLOC_HOST_PTR``, page-locked on GPUs), so the DMA runs at
  full bus speed; small arrays (under 1 MiB) go the ``copy`` way.
"""
from __future__ import annotations

import threading

import numpy as np

MODES = ("copy", "map", "pinned")
PINNED_MINIMUM = 1 << 20


class Transfers:
    """Host <-> device copies on one queue, the way ``mode`` says."""

    def __init__(self, context, queue, mode: str = "copy"):
        if mode not in MODES:
            from hpvm.errors import TargetError
            raise TargetError(f"gpu_opencl: transfer={mode!r} is not one of {', '.join(MODES)}")
        self.context, self.queue, self.mode = context, queue, mode
        self._stage = None
        self._lock = threading.Lock()

    def to_device(self, buffer, data: np.ndarray) -> None:
        import pyopencl as cl
        if self.mode == "map":
            view = self._map(buffer, cl.map_flags.WRITE_INVALIDATE_REGION, data)
            view[...] = data
            view.base.release()
        elif self.mode == "pinned" and data.nbytes >= PINNED_MINIMUM:
            with self._lock:
                stage = self._staging(data.nbytes)
                view = self._map(stage, cl.map_flags.WRITE_INVALIDATE_REGION, data)
                view[...] = data
                view.base.release()
                cl.enqueue_copy(self.queue, buffer, stage, byte_count=data.nbytes).wait()
        else:
            cl.enqueue_copy(self.queue, buffer, data, is_blocking=True)

    def to_host(self, buffer, out: np.ndarray) -> None:
        import pyopencl as cl
        if self.mode == "map":
            view = self._map(buffer, cl.map_flags.READ, out)
            out[...] = view
            view.base.release()
        elif self.mode == "pinned" and out.nbytes >= PINNED_MINIMUM:
            with self._lock:
                stage = self._staging(out.nbytes)
                cl.enqueue_copy(self.queue, stage, buffer, byte_count=out.nbytes)
                view = self._map(stage, cl.map_flags.READ, out)
                out[...] = view
                view.base.release()
        else:
            cl.enqueue_copy(self.queue, out, buffer, is_blocking=True)

    def _map(self, buffer, flags, like: np.ndarray) -> np.ndarray:
        import pyopencl as cl
        view, _ = cl.enqueue_map_buffer(self.queue, buffer, flags, 0, like.shape, like.dtype,
                                        is_blocking=True)
        return view

    def _staging(self, nbytes: int):
        """The page-locked staging buffer, grown to ``nbytes`` at least."""
        import pyopencl as cl
        if self._stage is None or self._stage.size < nbytes:
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
            self._stage = cl.Buffer(self.context, flags, nbytes)
        return self._stage
