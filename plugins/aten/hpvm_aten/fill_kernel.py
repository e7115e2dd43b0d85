"""perforation_fill on a GPU as one Triton kernel: one pass that reads the
compact rows (or columns) and writes the full ones, interpolating the
skipped ones (the same values as ``ops.perforation_fill``, which copies
and averages in five ATen passes).

The tensor is seen in its memory order as (outer, axis, inner) blocks:
NCHW or channels-last, the filled axis is one of the two spatial ones,
and both layouts keep what lies before and after it contiguous.
"""
from __future__ import annotations

import math

import torch

BLOCK = 1024
MAX_ELEMENTS = 2 ** 31 - BLOCK
"""Offsets are 32-bit."""


def fill(values: torch.Tensor, axis: int, every: int, offset: int, size: int,
         out_shape) -> torch.Tensor | None:
    """The filled tensor, or None where the kernel does not apply (no
    Triton, not a 4-D tensor on a GPU, too large)."""
    if not values.is_cuda or values.dim() != 4 or axis not in (2, 3) or size < 2:
        return None
    if not 0 < math.prod(out_shape) < MAX_ELEMENTS:
        return None
    try:
        kernel = _kernel()
    except ImportError:
        return None
    from .ops import empty_in_layout, memory_layout
    layout = memory_layout(values)
    values = values.contiguous(memory_format=layout)
    out = empty_in_layout(values, out_shape)
    n, c, h, w = out.shape
    if layout == torch.channels_last:
        inner = w * c if axis == 2 else c
    else:
        inner = w if axis == 2 else 1
    grid = ((out.numel() + BLOCK - 1) // BLOCK,)
    kernel[grid](values, out, size, values.shape[axis], inner, every, offset, out.numel(),
                 BLOCK=BLOCK)
    return out


_KERNEL = None


def _kernel():
    """The Triton kernel, compiled on first use (ImportError without Triton)."""
    global _KERNEL
    if _KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def perforation_fill_kernel(src, dst, size, compact, inner, every, offset, total,
                                    BLOCK: tl.constexpr):
            index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = index < total
            i = index % inner
            r = (index // inner) % size
            o = index // (inner * size)
            below = tl.where(r > 0, r - 1, r + 1)
            above = tl.where(r < size - 1, r + 1, r - 1)
            # compact position of a kept position p: p minus the skipped ones before it
            base = o * compact
            skipped = r % every == offset
            kept = tl.load(src + ((base + r - (r - offset + every - 1) // every) * inner + i),
                           mask=mask & ~skipped, other=0.0).to(tl.float32)
            low = tl.load(src + ((base + below - (below - offset + every - 1) // every)
                                 * inner + i), mask=mask & skipped, other=0.0).to(tl.float32)
            high = tl.load(src + ((base + above - (above - offset + every - 1) // every)
                                  * inner + i), mask=mask & skipped, other=0.0).to(tl.float32)
            value = tl.where(skipped, (low + high) * 0.5, kept)
            tl.store(dst + index, value.to(dst.dtype.element_ty), mask=mask)

        _KERNEL = perforation_fill_kernel
    return _KERNEL
