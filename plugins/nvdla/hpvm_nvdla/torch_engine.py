"""The emulator's convolutions on a CUDA GPU through torch.

INT8: the integer operands as float64, whose 53-bit mantissa holds every
product sum of int8 values exactly (the accumulators stay below 2**31),
so the result is bit-identical to numpy's int64.  FP16: FP32 convolution
of the FP16-rounded operands with TF32 off, as CACC accumulates; its
summation order differs from numpy's, so results agree within FP32
rounding before the FP16 rounding that follows.
"""
from __future__ import annotations

import numpy as np

from .layers import Layer


def available() -> bool:
    """True when torch is installed and sees a CUDA GPU."""
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return False
    import torch
    return torch.cuda.is_available()


def core_on_gpu(layer: Layer, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    import torch
    import torch.nn.functional as F
    integer = x.dtype.kind == "i"
    dtype = torch.float64 if integer else torch.float32
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    data = torch.from_numpy(np.ascontiguousarray(x)).to("cuda", dtype)
    kernel = torch.from_numpy(np.ascontiguousarray(weight)).to("cuda", dtype)
    if layer.kind == "fc":
        y = data.reshape(data.shape[0], -1) @ kernel.T
    else:
        top, left, bottom, right = layer.attrs["padding"]
        y = F.conv2d(F.pad(data, (left, right, top, bottom)), kernel,
                     stride=tuple(layer.attrs["stride"]), dilation=tuple(layer.attrs["dilation"]),
                     groups=layer.attrs["groups"])
    result = y.cpu().numpy()
    return np.rint(result).astype(np.int64) if integer else result.astype(np.float32)
