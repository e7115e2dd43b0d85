"""Moving arrays between host memory and device buffers.

Four ways, chosen with the option ``transfer``:

- ``copy``: ``clEnqueueCopy`` straight from/to the numpy array (pageable
  memory: the driver stages it itself, through one thread);
- ``map``: map the device buffer into host memory and copy with numpy
  (zero-copy on CPU devices; pinned staging inside the driver on GPUs);
- ``pinned``: through a page-locked host buffer kept mapped for the
  device's lifetime (``CL_MEM_ALLOC_HOST_PTR``), so the DMA runs at full
  bus speed, and the host side of the copy split over threads; small
  arrays (under 1 MiB) go the ``copy`` way;
- ``auto`` (the default): ``copy`` on CPU devices, where host and device
  memory are one, else ``pinned``.

Why threads: a run's outputs are fresh arrays, and past glibc's mmap
threshold (32 MiB) every one is new memory whose pages the OS faults in
and zeroes on first touch.  The driver's pageable copy touches them from
one thread (a 36 MiB output took 11 ms on the lent H200 host, 3 ms
staged and copied by 8 threads).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hpvm.errors import TargetError
from hpvm.threads import available_cores

MODES = ("auto", "copy", "map", "pinned")
PINNED_MINIMUM = 1 << 20
"""Arrays smaller than this go the ``copy`` way in ``pinned`` mode."""
STAGE_BYTES = 64 << 20
"""The most page-locked memory a device keeps for staging; larger arrays
move in pieces of this size."""
PIECE_BYTES = 1 << 20
"""The least a thread copies on the host: smaller copies use fewer threads."""


def resolved_mode(mode: str, device_kind: str) -> str:
    """The way ``mode`` moves data on a device of ``device_kind`` (OpenCL's
    device type name: ``GPU``, ``CPU``, ``ACCELERATOR`` ...)."""
    if mode not in MODES:
        raise TargetError(f"gpu_opencl: transfer={mode!r} is not one of {', '.join(MODES)}")
    if mode == "auto":
        return "copy" if "CPU" in device_kind.upper() else "pinned"
    return mode


class Transfers:
    """Host <-> device copies on one queue, the way ``mode`` says."""

    def __init__(self, runtime, mode: str = "auto"):
        self.queue = runtime.queue
        self.mode = resolved_mode(mode, runtime.info.kind)
        self._stage = _staging_of(runtime) if self.mode == "pinned" else None

    def to_device(self, buffer, data: np.ndarray) -> None:
        """Copy ``data`` (C-contiguous) into ``buffer``."""
        import pyopencl as cl
        if self.mode == "map":
            view = self._map(buffer, cl.map_flags.WRITE_INVALIDATE_REGION, data)
            view[...] = data
            view.base.release()
        elif self.mode == "pinned" and data.nbytes >= PINNED_MINIMUM:
            self._stage.to_device(self.queue, buffer, data)
        else:
            cl.enqueue_copy(self.queue, buffer, data, is_blocking=True)

    def to_host(self, buffer, out: np.ndarray) -> None:
        """Copy ``buffer`` into ``out`` (C-contiguous)."""
        import pyopencl as cl
        if self.mode == "map":
            view = self._map(buffer, cl.map_flags.READ, out)
            out[...] = view
            view.base.release()
        elif self.mode == "pinned" and out.nbytes >= PINNED_MINIMUM:
            self._stage.to_host(self.queue, buffer, out)
        else:
            cl.enqueue_copy(self.queue, out, buffer, is_blocking=True)

    def _map(self, buffer, flags, like: np.ndarray) -> np.ndarray:
        import pyopencl as cl
        view, _ = cl.enqueue_map_buffer(self.queue, buffer, flags, 0, like.shape, like.dtype,
                                        is_blocking=True)
        return view


class _Staging:
    """One device's page-locked staging memory, mapped once: copies DMA
    between it and device buffers, and threads copy between it and the
    caller's arrays.  Its mapped pointer is only ever a host pointer of
    other buffers' copies, never used by a command on its own buffer."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.lock = threading.Lock()
        self.buffer = None
        self.view: np.ndarray | None = None

    def to_device(self, queue, buffer, data: np.ndarray) -> None:
        import pyopencl as cl
        source = _bytes_of(data)
        with self.lock:
            stage = self._reserve(source.size)
            for start in range(0, source.size, stage.size):
                piece = source[start:start + stage.size]
                parallel_copy(stage[:piece.size], piece)
                cl.enqueue_copy(queue, buffer, stage[:piece.size], dst_offset=start,
                                is_blocking=True)

    def to_host(self, queue, buffer, out: np.ndarray) -> None:
        import pyopencl as cl
        target = _bytes_of(out)
        with self.lock:
            stage = self._reserve(target.size)
            for start in range(0, target.size, stage.size):
                piece = target[start:start + stage.size]
                cl.enqueue_copy(queue, stage[:piece.size], buffer, src_offset=start,
                                is_blocking=True)
                parallel_copy(piece, stage[:piece.size])

    def _reserve(self, nbytes: int) -> np.ndarray:
        """The mapped staging bytes, grown towards ``nbytes`` (at most
        STAGE_BYTES)."""
        import pyopencl as cl
        wanted = min(nbytes, STAGE_BYTES)
        if self.view is None or self.view.size < wanted:
            if self.view is not None:
                self.view.base.release()
                self.buffer.release()
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
            self.buffer = cl.Buffer(self.runtime.context, flags, wanted)
            self.view, _ = cl.enqueue_map_buffer(
                self.runtime.queue, self.buffer, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                (wanted,), np.uint8, is_blocking=True)
        return self.view


_STAGINGS: dict[int, _Staging] = {}
_STAGINGS_LOCK = threading.Lock()


def _staging_of(runtime) -> _Staging:
    """The staging memory of ``runtime``'s device (shared by every
    executable on it)."""
    with _STAGINGS_LOCK:
        return _STAGINGS.setdefault(id(runtime), _Staging(runtime))


def _bytes_of(array: np.ndarray) -> np.ndarray:
    if not array.flags.c_contiguous:
        raise ValueError("gpu_opencl transfers move C-contiguous arrays only")
    return array.reshape(-1).view(np.uint8)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def parallel_copy(target: np.ndarray, source: np.ndarray) -> None:
    """``target[...] = source`` for flat byte arrays of one size, split
    over threads (numpy copies without the GIL) where it is large."""
    pieces = max(1, min(available_cores(), target.size // PIECE_BYTES))
    if pieces == 1:
        np.copyto(target, source)
        return
    step = -(-target.size // pieces)
    bounds = [(start, start + step) for start in range(0, target.size, step)]
    list(_copy_pool().map(lambda b: np.copyto(target[b[0]:b[1]], source[b[0]:b[1]]), bounds))


def _copy_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(available_cores(), thread_name_prefix="hpvm-copy")
        return _POOL
