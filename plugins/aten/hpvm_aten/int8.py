"""INT8 tensor nodes on ATen, with the semantics of hpvm.ir.tensor_ops.int8.

The operands are quantised per tensor (round half up, [-127, 127]).  On
CUDA a gemm or a 2-D matmul multiplies the int8 matrices with cuBLAS's
integer GEMM (``torch._int_mm``: 32-bit accumulators), then scales the
sums; a constant right-hand side is quantised and laid out once.  Other
ops, and every op on the CPU, run in f32 on the dequantised operands (the
same values): torch has no integer convolution, and an im2col product
through ``_int_mm`` measured 3-6x slower than cuDNN's FP16 convolution on
an H200 for VGG-sized layers.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from hpvm.ir.tensor_ops.int8 import QMAX

from .fusion import fused
from .ops import _activation

MATRIX_OPS = ("gemm", "matmul")
LANE = 8
"""cuBLAS's integer GEMM wants K and N multiples of 8, and more than 16 rows."""
MIN_ROWS = 17


def steps(tensor: torch.Tensor, scale: float | torch.Tensor) -> torch.Tensor:
    """``tensor``'s quantisation steps, as floats in [-127, 127] (one new
    tensor, updated in place: fewer passes over memory)."""
    return torch.div(tensor, scale).add_(0.5).floor_().clamp_(-QMAX, QMAX)


def _padded(q: torch.Tensor, columns: int, rows: int = 0) -> torch.Tensor:
    """``q`` with zero columns (and rows) added to reach multiples of 8."""
    extra_columns, extra_rows = -columns % LANE, -rows % LANE
    return F.pad(q, (0, extra_columns, 0, extra_rows)) if extra_columns or extra_rows else q


def dequantized(inputs: dict, scales: dict) -> dict:
    """``inputs`` with the operands in ``scales`` on their INT8 grid."""
    return {port: steps(t, scales[port]) * scales[port] if port in scales else t
            for port, t in inputs.items()}


def integer_rhs(b: torch.Tensor, scale: float, transposed: bool) -> torch.Tensor:
    """The right-hand operand as cuBLAS's integer GEMM reads it: int8,
    column-major [K, N], zero-padded to multiples of 8."""
    columns = b if transposed else b.t()  # [N, K]
    n, k = columns.shape
    q = _padded(steps(columns, scale).to(torch.int8), k, n)
    return q.contiguous().t()


def integer_factors(scales: tuple[float, float], attrs: dict, plan_op: str,
                    device) -> torch.Tensor:
    """The numbers :func:`integer_product` scales by, as one tensor on
    ``device`` made once per node (a Python float would make the fused
    kernels recompile for every node's scales): the left operand's
    scale, the sums' scale (times gemm's alpha) and the bias's factor."""
    alpha, beta = (attrs["alpha"], attrs["beta"]) if plan_op == "gemm" else (1.0, 0.0)
    return torch.tensor([scales[0], scales[0] * scales[1] * alpha, beta], device=device)


def integer_product(plan_op: str, a: torch.Tensor, rhs: torch.Tensor, n: int,
                    factors: torch.Tensor, attrs: dict, bias: torch.Tensor | None,
                    out_shape) -> torch.Tensor | None:
    """``a @ b`` of a gemm or 2-D matmul through the integer GEMM (``rhs``
    from :func:`integer_rhs`, ``factors`` from :func:`integer_factors`),
    with gemm's bias and activation; None when the shapes do not suit it
    (too few rows)."""
    if plan_op == "gemm" and attrs["trans_a"]:
        a = a.t()
    if a.dim() != 2 or a.shape[0] < MIN_ROWS:
        return None
    sums = torch._int_mm(fused(_quantized_lhs)(a, factors), rhs)
    if plan_op != "gemm" or bias is None:
        bias = factors.new_zeros(())
    activation = attrs.get("activation", "none") if plan_op == "gemm" else "none"
    return fused(_epilogue)(sums, n, factors, bias.expand(out_shape), activation)


def _quantized_lhs(a: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    return _padded(steps(a, factors[0]).to(torch.int8), a.shape[1]).contiguous()


def _epilogue(sums: torch.Tensor, n: int, factors: torch.Tensor, bias: torch.Tensor,
              activation: str) -> torch.Tensor:
    y = sums[:, :n].to(torch.float32) * factors[1] + factors[2] * bias
    return _activation(y, activation)
