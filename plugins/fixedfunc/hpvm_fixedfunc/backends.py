"""Where the accelerators' functions run, for want of ESP accelerator
hardware: numpy on the host (pocketfft for the FFT, BLAS for GEMM), or
PyTorch on a CUDA GPU (cuFFT, cuBLAS) when one is visible.

A backend takes host (numpy) arrays with :meth:`array`, computes with the
operations the signatures use, and writes results into host arrays with
:meth:`store`.
A real accelerator's driver would be one more backend (or Device).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from hpvm.errors import TargetError
from hpvm.threads import available_cores

ROWS_PER_THREAD = 64
"""A batch is split over threads only when every thread gets this many rows."""


@lru_cache(maxsize=1)
def _threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(available_cores(), thread_name_prefix="hpvm-fixedfunc")


def in_row_blocks(function, rows: int) -> None:
    """``function(start, stop)`` for blocks of ``rows`` rows, on the
    thread pool when there are enough (numpy releases the GIL in FFTs and
    large array operations), else at once."""
    workers = min(available_cores(), rows // ROWS_PER_THREAD)
    if workers < 2:
        function(0, rows)
        return
    bounds = np.linspace(0, rows, workers + 1).astype(int)
    list(_threads().map(function, bounds[:-1], bounds[1:]))


class NumpyBackend:
    name = "numpy"
    detail = "numpy on the host (pocketfft FFT, BLAS GEMM)"

    def array(self, values):
        return np.asarray(values)

    def store(self, destination: np.ndarray, values) -> None:
        """Write ``values`` into the host array ``destination``."""
        np.copyto(destination, values, casting="unsafe")

    def complex(self, real, imag):
        signal = np.empty(real.shape, np.result_type(real.dtype, np.complex64))
        signal.real, signal.imag = real, imag
        return signal

    def fft(self, signal, inverse: bool, reorder_in=None, reorder_out=None):
        """Along the last axis, unnormalised both ways (as a butterfly
        network computes it); ``reorder_in`` / ``reorder_out``: index
        arrays permuting the signal before and the spectrum after.  Rows
        are spread over threads."""
        points = signal.shape[-1]
        rows = signal.reshape(-1, points)
        spectrum = np.empty_like(rows)

        def transform(start: int, stop: int) -> None:
            block = rows[start:stop] if reorder_in is None else np.take(rows[start:stop], reorder_in, axis=-1)
            if inverse:
                block = np.fft.ifft(block, axis=-1, norm="forward")
            else:
                block = np.fft.fft(block, axis=-1)
            spectrum[start:stop] = block if reorder_out is None else np.take(block, reorder_out, axis=-1)
        in_row_blocks(transform, rows.shape[0])
        return spectrum.reshape(signal.shape)

    def interleaved(self, values):
        """Complex ``values`` as real and imaginary parts side by side
        along the last axis (re0, im0, re1, im1 ...)."""
        return np.stack([values.real, values.imag], axis=-1).reshape(values.shape[:-1] + (-1,))

    def matmul(self, left, right):
        return left @ right

    def flip(self, values):
        return values[::-1]

    def correlate_valid(self, signal, taps):
        windows = np.lib.stride_tricks.sliding_window_view(signal, taps.shape[0], axis=-1)
        return windows @ taps

    def viterbi(self, obs, init, transition, emission, maximum: bool = False):
        """Viterbi over a batch: (likelihoods [B, T, S], path [B, T],
        back-pointers [B, T, S]: each state's best predecessor, 0 at the
        first step), sequences spread over threads.  Min-sum, or with
        ``maximum`` max-product."""
        llike = self._empty((*obs.shape, init.shape[0]), init)
        path = self._empty(obs.shape, obs)
        pointers = self._empty((*obs.shape, init.shape[0]), obs)

        def decode(start: int, stop: int) -> None:
            llike[start:stop], path[start:stop], pointers[start:stop] = self._decode(
                obs[start:stop], init, transition, emission, maximum)
        in_row_blocks(decode, obs.shape[0])
        return llike, path, pointers

    def dense_transitions(self, tails, heads, costs, states: int):
        """A list of transitions as a [prev, curr] matrix: the least cost of
        each pair, +inf where there is no edge."""
        matrix = np.full((states, states), np.inf, dtype=costs.dtype)
        np.minimum.at(matrix, (tails, heads), costs)
        return matrix

    def edge_path(self, llike, tails, heads, costs):
        """The min-sum path over a list of transitions, as a kernel looping
        over the edges finds it: into each state, the first edge whose tail
        gives the least likelihood + cost (0 where none is finite)."""
        tails, heads = self._index(tails), self._index(heads)
        path = self._empty(llike.shape[:2], tails)
        path[:, -1] = self._argmin(llike[:, -1], 1)
        for t in range(llike.shape[1] - 2, -1, -1):
            via = llike[:, t][:, tails] + costs[None]
            via = self._where(heads[None] == path[:, t + 1][:, None], via, np.inf)
            first = self._argmin(via, 1)
            path[:, t] = self._where(self._min(via, 1) < np.inf, tails[first], 0)
        return path

    def _where(self, condition, yes, no):
        return np.where(condition, yes, no)

    def _decode(self, obs, init, transition, emission, maximum: bool):
        """The kernels' values exactly: min over prev of (llike + transition)
        + emission is (min over prev of llike + transition) + emission,
        rounding being monotonic (and max over prev of llike * transition *
        emission likewise, the factors being at least 0); first minima
        (maxima) in the traceback."""
        combine = (lambda a, b: a * b) if maximum else (lambda a, b: a + b)
        pick, pick_at = (self._max, self._argmax) if maximum else (self._min, self._argmin)
        sequences, steps = obs.shape
        obs = self._index(obs)
        emitted = emission.T[obs]                       # [B, T, S]
        llike = self._empty((sequences, steps, init.shape[0]), init)
        pointers = self._zeros((sequences, steps, init.shape[0]), obs)
        llike[:, 0] = combine(init, emitted[:, 0])
        for t in range(1, steps):
            candidates = combine(llike[:, t - 1, :, None], transition[None])
            pointers[:, t] = pick_at(candidates, 1)
            llike[:, t] = combine(pick(candidates, 1), emitted[:, t])
        path = self._empty(obs.shape, obs)
        path[:, -1] = pick_at(llike[:, -1], 1)
        for t in range(steps - 2, -1, -1):
            path[:, t] = pick_at(combine(llike[:, t], transition[:, path[:, t + 1]].T), 1)
        return llike, path, pointers

    # the few calls where numpy and torch differ ---------------------------------
    def _index(self, values):
        return values

    def _empty(self, shape, like):
        return np.empty(shape, like.dtype)

    def _zeros(self, shape, like):
        return np.zeros(shape, like.dtype)

    def _min(self, values, axis: int):
        return values.min(axis=axis)

    def _max(self, values, axis: int):
        return values.max(axis=axis)

    def _argmax(self, values, axis: int):
        return values.argmax(axis=axis)

    def _argmin(self, values, axis: int):
        return values.argmin(axis=axis)


class TorchBackend(NumpyBackend):
    """The same functions on a torch device (cuFFT and cuBLAS on CUDA)."""

    name = "torch"

    def __init__(self, device: str):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        where = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "the CPU"
        self.detail = f"torch {torch.__version__} on {where} (cuFFT, cuBLAS)" if self.device.type == "cuda" \
            else f"torch {torch.__version__} on the CPU"

    def array(self, values):
        return self.torch.as_tensor(np.ascontiguousarray(values), device=self.device)

    def store(self, destination: np.ndarray, values) -> None:
        """Straight from the device into ``destination`` (one copy)."""
        self.torch.from_numpy(destination).copy_(values)

    def complex(self, real, imag):
        return self.torch.complex(real, imag)

    def fft(self, signal, inverse: bool, reorder_in=None, reorder_out=None):
        if reorder_in is not None:
            signal = signal[..., self.torch.as_tensor(reorder_in, device=self.device)]
        spectrum = (self.torch.fft.ifft(signal, dim=-1, norm="forward") if inverse
                    else self.torch.fft.fft(signal, dim=-1))
        if reorder_out is not None:
            spectrum = spectrum[..., self.torch.as_tensor(reorder_out, device=self.device)]
        return spectrum

    def interleaved(self, values):
        return self.torch.view_as_real(values).reshape(values.shape[:-1] + (-1,))

    def viterbi(self, obs, init, transition, emission, maximum: bool = False):
        # the batch is one launch per step
        return self._decode(obs, init, transition, emission, maximum)

    def flip(self, values):
        return self.torch.flip(values, (0,))

    def correlate_valid(self, signal, taps):
        return signal.unfold(-1, taps.shape[0], 1) @ taps

    def _index(self, values):
        return values.long()

    def _empty(self, shape, like):
        return self.torch.empty(shape, dtype=like.dtype, device=self.device)

    def _zeros(self, shape, like):
        return self.torch.zeros(shape, dtype=like.dtype, device=self.device)

    def dense_transitions(self, tails, heads, costs, states: int):
        matrix = self.torch.full((states * states,), float("inf"), dtype=costs.dtype,
                                 device=self.device)
        flat = self._index(tails) * states + self._index(heads)
        return matrix.scatter_reduce(0, flat, costs, reduce="amin").reshape(states, states)

    def _where(self, condition, yes, no):
        no = self.torch.as_tensor(no, dtype=yes.dtype if hasattr(yes, "dtype") else None,
                                  device=self.device)
        return self.torch.where(condition, yes, no)

    def _min(self, values, axis: int):
        return values.amin(dim=axis)

    def _argmin(self, values, axis: int):
        return values.argmin(dim=axis)

    def _max(self, values, axis: int):
        return values.amax(dim=axis)

    def _argmax(self, values, axis: int):
        return values.argmax(dim=axis)


def cuda_present() -> bool:
    """Cheaply (without importing torch): is torch installed and an NVIDIA
    GPU device node present?"""
    import importlib.util
    return importlib.util.find_spec("torch") is not None and os.path.exists("/dev/nvidia0")


def torch_devices() -> list[str]:
    """torch devices usable here ('cuda' first when visible); [] without torch."""
    try:
        import torch
    except ImportError:
        return []
    return (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]


def make_backend(name: str):
    """The backend an option names: ``numpy``, ``torch`` (cuda when
    visible), ``torch:cpu``, ``torch:cuda`` ...; ``auto``: torch on CUDA
    when a GPU is visible, else numpy."""
    if name == "auto":
        name = "torch:cuda" if cuda_present() and "cuda" in torch_devices() else "numpy"
    if name == "numpy":
        return NumpyBackend()
    if name.startswith("torch"):
        devices = torch_devices()
        if not devices:
            raise TargetError("fixedfunc: backend 'torch' needs PyTorch (pip install torch); use "
                              "backend='numpy'")
        device = name.partition(":")[2] or devices[0]
        if device.startswith("cuda") and "cuda" not in devices:
            raise TargetError(f"fixedfunc: backend '{name}' needs a CUDA GPU, and PyTorch sees none; "
                              "use backend='numpy'")
        return TorchBackend(device)
    raise TargetError(f"fixedfunc: unknown backend '{name}'; use auto, numpy, torch, torch:cpu or "
                      "torch:cuda")
