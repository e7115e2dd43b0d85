"""matmul (ONNX MatMul, rank 2 or more) and gemm (ONNX Gemm).

matmul: a [..., M, K], b [..., K, N]; y [..., M, N]; the batch dims
(all but the last two) broadcast with numpy rules (equal, or 1 on one
side, or absent).  Front ends make rank-1 operands rank 2 around it.
gemm: y = alpha * A' @ B' + beta * c, A' = a or a^T (trans_a), B' = b or
b^T (trans_b); the optional c broadcasts to [M, N] like a bias; attribute
activation (activation.py: none, relu, tanh, sigmoid or a clip) is applied
to y (operator fusion).
Products with a fixed N lower to register tiles (matrix_tiles.py).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Expr
from ..types import BufferType
from . import matrix_tiles
from .packed_products import lower_packed_product
from .activation import activation_attr, apply_kernel, apply_numpy
from .dims import broadcast_shape, require_equal
from .lowering import KernelBuilder, broadcast_indices, const_value, replication_over
from .spec import OpContext, TensorOpSpec


# matmul -------------------------------------------------------------------
def _infer_matmul(ctx: OpContext) -> dict[str, BufferType]:
    return {"y": BufferType(ctx.numeric_element(), product_shape(ctx, "a", "b"))}


def require_matrix(ctx: OpContext, port: str) -> None:
    """Error unless ``port`` is a matrix or a batch of them (rank 2 or more)."""
    if ctx.rank(port) < 2:
        ctx.fail(f"input '{port}' must have rank 2 or more, got {ctx.types[port]}",
                 "make a vector a matrix of one row or column (reshape)", port)


def product_shape(ctx: OpContext, left: str, right: str) -> tuple:
    """The shape of the batched product of ports ``left`` [..., M, K] and
    ``right`` [..., K, N]: the broadcast batch, M, N (errors naming the
    port that does not fit)."""
    for port in (left, right):
        require_matrix(ctx, port)
    a, b = ctx.shape(left), ctx.shape(right)
    require_equal(ctx, a[-1], b[-2], f"the columns of '{left}' (K)", f"the rows of '{right}'",
                  right)
    batch = broadcast_shape(ctx, (left, right), [a[:-2], b[:-2]])
    return batch + (a[-2], b[-1])


def _lower_matmul(b: KernelBuilder) -> tuple[Expr, ...]:
    replication = _lower_product(b, False, False, 1.0, 1.0, "none")
    if replication is not None:
        return replication
    out_dims = b.dims("y")
    hints = [f"batch{axis}" for axis in range(len(out_dims) - 2)] + ["m", "n"]
    i, indices = b.instance_indices(out_dims, hints)
    batch, (m, n) = indices[:-2], indices[-2:]
    acc = b.let("acc", b.const(0))
    with b.loop("k", b.dim("a", -1)) as k:
        lhs = b.load("a", *broadcast_indices(b.dims("a")[:-2], batch), m, k)
        rhs = b.load("b", *broadcast_indices(b.dims("b")[:-2], batch), k, n)
        b.assign(acc, acc + lhs * rhs)
    b.store("y", i, acc)
    return replication_over(out_dims)


MATMUL = TensorOpSpec(
    "matmul", ("a", "b"), ("y",), _infer_matmul,
    lambda ctx, x: {"y": np.matmul(x["a"], x["b"])}, _lower_matmul,
    summary="matrix product, batched over broadcast leading dims (ONNX MatMul)")


def _lower_product(b: KernelBuilder, trans_a: bool, trans_b: bool, alpha: float,
                   beta: float, activation) -> tuple[Expr, ...] | None:
    """y[..., M, N] = act(alpha * a' @ b' + beta * c) as register tiles:
    packed where large (packed_products.py), else read in place
    (matrix_tiles.py); None unless N is fixed."""
    if const_value(b.dim("y", -1)) is None:
        return None
    finish = matrix_tiles.gemm_finish(alpha, beta, activation)
    product = matrix_tiles.port_product(b, trans_a, trans_b, finish)
    packed = lower_packed_product(b, product)
    if packed is not None:
        return packed
    if trans_b and not trans_a:
        return matrix_tiles.lower_dot_products(b, product)
    return matrix_tiles.lower_row_tiles(b, product)


# gemm ---------------------------------------------------------------------
def _gemm_attrs(ctx: OpContext) -> tuple[float, float, bool, bool]:
    return (ctx.float_attr("alpha"), ctx.float_attr("beta"),
            ctx.flag_attr("trans_a"), ctx.flag_attr("trans_b"))


def _infer_gemm(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    _, _, trans_a, trans_b = _gemm_attrs(ctx)
    activation_attr(ctx)
    ctx.expect_rank("a", 2)
    ctx.expect_rank("b", 2)
    rows, inner = reversed(ctx.shape("a")) if trans_a else ctx.shape("a")
    inner_b, cols = reversed(ctx.shape("b")) if trans_b else ctx.shape("b")
    require_equal(ctx, inner, inner_b, "the inner size K of 'a'", "the K of 'b'", "b")
    if ctx.has("c"):
        if ctx.rank("c") > 2 or broadcast_shape(
                ctx, ("y", "c"), [(rows, cols), ctx.shape("c")]) != (rows, cols):
            ctx.fail(f"input 'c' {ctx.types['c']} does not broadcast to the result "
                     f"[{rows}, {cols}]", "give 'c' a shape like [N], [M, 1] or [M, N]", "c")
    return {"y": BufferType(element, (rows, cols))}


def _evaluate_gemm(ctx: OpContext, x: dict) -> dict:
    alpha, beta, trans_a, trans_b = _gemm_attrs(ctx)
    a = x["a"].T if trans_a else x["a"]
    b = x["b"].T if trans_b else x["b"]
    kind = a.dtype.type
    y = kind(alpha) * (a @ b)
    if "c" in x:
        y = y + kind(beta) * x["c"]
    return {"y": apply_numpy(activation_attr(ctx), y)}


def _lower_gemm(b: KernelBuilder) -> tuple[Expr, ...]:
    alpha, beta, trans_a, trans_b = _gemm_attrs(b.ctx)
    activation = activation_attr(b.ctx)
    replication = _lower_product(b, trans_a, trans_b, alpha, beta, activation)
    if replication is not None:
        return replication
    out_dims = b.dims("y")
    i, (m, n) = b.instance_indices(out_dims, ["m", "n"])
    acc = b.let("acc", b.const(0))
    with b.loop("k", b.dim("a", 0 if trans_a else 1)) as k:
        lhs = b.load("a", k, m) if trans_a else b.load("a", m, k)
        rhs = b.load("b", n, k) if trans_b else b.load("b", k, n)
        b.assign(acc, acc + lhs * rhs)
    result = b.const(alpha) * acc
    if "c" in b.types:
        result = result + b.const(beta) * b.load_broadcast("c", [m, n])
    b.store("y", i, apply_kernel(activation, result))
    return replication_over(out_dims)


GEMM = TensorOpSpec(
    "gemm", ("a", "b"), ("y",), _infer_gemm, _evaluate_gemm, _lower_gemm,
    optional_inputs=("c",),
    attrs={"alpha": 1.0, "beta": 1.0, "trans_a": False, "trans_b": False,
           "activation": "none"},
    summary="y = alpha * a' @ b' + beta * c (ONNX Gemm)")

OPS = (MATMUL, GEMM)
