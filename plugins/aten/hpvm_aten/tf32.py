"""TF32 on aten, with the semantics of hpvm.ir.tensor_ops.precision.

An exact (fp32) node computes in IEEE single precision on CUDA too:
cuDNN's and cuBLAS's TF32 tensor cores, which PyTorch allows for
convolutions by default, are turned off for it.  A tf32 node turns them
on (on CUDA the libraries round the operands); on the CPU its operands
are rounded to TF32 here, to nearest even, and the op runs in f32.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from hpvm.ir.tensor_ops.precision import TF32_DROPPED_BITS

_LOW_BITS = (1 << TF32_DROPPED_BITS) - 1
_EXPONENT = 0x7F800000


@contextmanager
def tensor_cores(device: torch.device, allowed: bool):
    """cuDNN's and cuBLAS's TF32 allowed (or not) while the block runs on
    ``device``; nothing changes on the CPU."""
    if device.type != "cuda":
        yield
        return
    cudnn, matmul = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = cudnn, matmul


def rounded_operands(inputs: dict, operands: tuple[str, ...]) -> dict:
    """``inputs`` with the f32 ``operands`` rounded to TF32 (kept f32)."""
    return {port: _rounded(t) if port in operands and t.dtype == torch.float32 else t
            for port, t in inputs.items()}


def _rounded(tensor: torch.Tensor) -> torch.Tensor:
    bits = tensor.contiguous().view(torch.int32)
    odd = (bits >> TF32_DROPPED_BITS) & 1
    rounded = (bits + _LOW_BITS // 2 + odd) & ~_LOW_BITS
    special = (bits & _EXPONENT) == _EXPONENT
    return torch.where(special, bits, rounded).view(torch.float32)
