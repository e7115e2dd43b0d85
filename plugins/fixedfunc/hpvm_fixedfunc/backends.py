"""Where the accelerators' functions run, for want of ESP accelerator
hardware: numpy on the host (pocketfft for the FFT, BLAS for GEMM), or
PyTorch on a CUDA GPU (cuFFT, cuBLAS) when one is visible.

A backend takes host (numpy) arrays with :meth:`array`, computes with the
operations the signatures use, and hands results back with :meth:`host`.
A real accelerator's driver would be one more backend (or Device).
"""
from __future__ import annotations

import numpy as np

from hpvm.errors import TargetError


class NumpyBackend:
    name = "numpy"
    detail = "numpy on the host (pocketfft FFT, BLAS GEMM)"

    def array(self, values):
        return np.asarray(values)

    def host(self, values) -> np.ndarray:
        return np.asarray(values)

    def complex(self, real, imag):
        return real + 1j * imag

    def take_last(self, values, index: np.ndarray):
        return values[..., index]

    def fft(self, signal, inverse: bool):
        if inverse:   # unnormalised, as a butterfly network computes it
            return np.fft.ifft(signal, axis=-1) * signal.shape[-1]
        return np.fft.fft(signal, axis=-1)

    def matmul(self, left, right):
        return left @ right

    def flip(self, values):
        return values[::-1]

    def correlate_valid(self, signal, taps):
        windows = np.lib.stride_tricks.sliding_window_view(signal, taps.shape[0], axis=-1)
        return windows @ taps

    def viterbi(self, obs, init, transition, emission):
        """Min-sum Viterbi over a batch: (likelihoods [B, T, S], path
        [B, T]); sums in the order ``llike + transition + emission`` and
        first minima, as the reference kernels."""
        sequences, steps = obs.shape
        obs = self._index(obs)
        llike = self._empty((sequences, steps, init.shape[0]), init)
        llike[:, 0] = init + emission[:, obs[:, 0]].T
        for t in range(1, steps):
            candidates = llike[:, t - 1, :, None] + transition[None] + emission[:, obs[:, t]].T[:, None, :]
            llike[:, t] = self._min(candidates, 1)
        path = self._empty(obs.shape, obs)
        path[:, -1] = self._argmin(llike[:, -1], 1)
        for t in range(steps - 2, -1, -1):
            path[:, t] = self._argmin(llike[:, t] + transition[:, path[:, t + 1]].T, 1)
        return llike, path

    # the few calls where numpy and torch differ ---------------------------------
    def _index(self, values):
        return values

    def _empty(self, shape, like):
        return np.empty(shape, like.dtype)

    def _min(self, values, axis: int):
        return values.min(axis=axis)

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

    def host(self, values) -> np.ndarray:
        return values.cpu().numpy()

    def complex(self, real, imag):
        return self.torch.complex(real, imag)

    def take_last(self, values, index: np.ndarray):
        return values[..., self.torch.as_tensor(index, device=self.device)]

    def fft(self, signal, inverse: bool):
        if inverse:
            return self.torch.fft.ifft(signal, dim=-1) * signal.shape[-1]
        return self.torch.fft.fft(signal, dim=-1)

    def flip(self, values):
        return self.torch.flip(values, (0,))

    def correlate_valid(self, signal, taps):
        return signal.unfold(-1, taps.shape[0], 1) @ taps

    def _index(self, values):
        return values.long()

    def _empty(self, shape, like):
        return self.torch.empty(shape, dtype=like.dtype, device=self.device)

    def _min(self, values, axis: int):
        return values.amin(dim=axis)

    def _argmin(self, values, axis: int):
        return values.argmin(dim=axis)


def cuda_present() -> bool:
    """Cheaply (without importing torch): is torch installed and an NVIDIA
    GPU device node present?"""
    import importlib.util
    import os
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
