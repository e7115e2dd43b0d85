"""max_pool and avg_pool over NCHW inputs (ONNX MaxPool / AveragePool
without dilation or ceil mode).

Ports: x [N, C, H, W]; y [N, C, OH, OW], OH = (H + top + bottom - kh) / sh + 1.
Attributes: kernel [kh, kw] (required), stride [sh, sw], padding
[top, left, bottom, right] (each smaller than the kernel, as ONNX Runtime
requires); avg_pool also count_include_pad (False: padded cells are not
counted, as in ONNX).

Lowering: a window is a rectangle, so each output row first folds its
window's input rows into a private row (contiguous, vectorised), then each
output value folds its window's columns of that row: kh + kw steps per
value instead of kh * kw guarded ones.  Sampled windows and symbolic
widths take one guarded step per cell.

Reduction sampling (ApproxHPVM; default ``()``, exact): ``sample``
``(every, offset)`` skips the window cells whose row-major index ``r * kw
+ s`` has ``index % every == offset``: max_pool takes the maximum of the
others, avg_pool their mean.  It needs a window of at least two cells and
no padding.
"""
from __future__ import annotations

import numpy as np

from ..kernel import ArrayDecl, Cast, Const, Expr, InstanceId, Load
from ..types import I64, BufferType
from .conv import window_attrs
from .dims import window_dim
from .channels_last import activation_index
from .lowering import (
    KernelBuilder, add, const_value, div, in_range, maximum, minimum, mul, replication_over,
)
from .perforation import skip_pattern
from .spec import REQUIRED, OpContext, TensorOpSpec
from .tiled import fixed_sizes, i64

MAX_ROW_ELEMENTS = 16384
"""Longest private row of the row-folding lowering (64 KiB of f32, on a
thread's stack)."""


def _pool_attrs(ctx: OpContext):
    """(kernel, stride, padding), checked."""
    kernel = ctx.ints_attr("kernel", 2, minimum=1)
    stride, padding = window_attrs(ctx, dilation=False)
    for side, pad in zip(("top", "left", "bottom", "right"), padding):
        extent = kernel[0] if side in ("top", "bottom") else kernel[1]
        if pad >= extent:
            ctx.fail(f"{side} padding {pad} is not smaller than the kernel ({extent})",
                     "use padding smaller than the kernel size")
    return kernel, stride, padding


def pool_sampling(ctx: OpContext) -> tuple[int, int] | None:
    """The ``sample`` pattern, checked against the window."""
    pattern = skip_pattern(ctx, "sample")
    if pattern is not None:
        (kh, kw), _, padding = _pool_attrs(ctx)
        if any(padding) or kh * kw < 2:
            ctx.fail(f"attribute 'sample' needs a window of at least 2 cells and no padding "
                     f"(kernel {[kh, kw]}, padding {list(padding)})",
                     "remove 'sample' from this pool")
    return pattern


def _kept_taps(ctx: OpContext) -> list[bool]:
    """Per window cell (row-major): whether ``sample`` keeps it."""
    (kh, kw) = _pool_attrs(ctx)[0]
    pattern = pool_sampling(ctx)
    return [pattern is None or t % pattern[0] != pattern[1] for t in range(kh * kw)]


def _infer_pool(float_only: bool):
    def infer(ctx: OpContext) -> dict[str, BufferType]:
        element = ctx.float_element() if float_only else ctx.numeric_element()
        ctx.expect_rank("x", 4)
        (kh, kw), (sh, sw), (top, left, bottom, right) = _pool_attrs(ctx)
        batch, channels, height, width = ctx.shape("x")
        out_h = window_dim(ctx, height, kh, sh, top + bottom, "height", "x")
        out_w = window_dim(ctx, width, kw, sw, left + right, "width", "x")
        pool_sampling(ctx)
        return {"y": BufferType(element, (batch, channels, out_h, out_w))}
    return infer


def _windows(ctx: OpContext, x: np.ndarray, fill):
    """Every (r, s) offset's strided view of padded ``x``: [N, C, OH, OW]."""
    (kh, kw), (sh, sw), (top, left, bottom, right) = _pool_attrs(ctx)
    _, _, out_h, out_w = ctx.spec.infer_fn(ctx)["y"].shape
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    for r in range(kh):
        for s in range(kw):
            yield padded[:, :, r:r + sh * (out_h - 1) + 1:sh, s:s + sw * (out_w - 1) + 1:sw]


def _sampled_windows(ctx: OpContext, x: np.ndarray, fill) -> list[np.ndarray]:
    return [w for w, kept in zip(_windows(ctx, x, fill), _kept_taps(ctx)) if kept]


def _evaluate_max_pool(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    lowest = -np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    return {"y": np.maximum.reduce(_sampled_windows(ctx, data, lowest))}


def _evaluate_avg_pool(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    windows = _sampled_windows(ctx, data, 0)
    if pool_sampling(ctx) is not None:
        return {"y": sum(windows) / data.dtype.type(len(windows))}
    total = sum(windows)
    if ctx.flag_attr("count_include_pad"):
        kh, kw = _pool_attrs(ctx)[0]
        return {"y": total / data.dtype.type(kh * kw)}
    return {"y": total / sum(_windows(ctx, np.ones_like(data), 0))}


def _lower_pool(b: KernelBuilder, start, visit, result) -> tuple[Expr, ...]:
    """One instance per output row (n, c, oh), looping over its columns and
    each one's window (the row's indices are worked out once, not per
    element).  ``start(n, c, ih0, iw0)`` declares the accumulators (ih0,
    iw0: the window's top-left corner, maybe in the padding) and returns
    them; ``visit(acc, n, c, ih, iw)`` folds in one in-range cell;
    ``result(acc)`` is the value stored."""
    (kh, kw), (sh, sw), (top, left, bottom, right) = _pool_attrs(b.ctx)
    _, _, height, width = b.dims("x")
    out_dims = b.dims("y")
    _, (n, c, oh) = b.instance_indices(out_dims[:3], ["n", "c", "oh"])
    ih0 = b.let("ih0", add(mul(oh, Const(sh, I64)), Const(-top, I64)))
    sampling = pool_sampling(b.ctx)
    with b.loop("ow", out_dims[3]) as ow:
        iw0 = b.let("iw0", add(mul(ow, Const(sw, I64)), Const(-left, I64)))
        acc = start(n, c, ih0, iw0)
        with b.loop("r", Const(kh, I64)) as r:
            ih = b.let("ih", add(ih0, r))
            with b.guard(top + bottom > 0, in_range(ih, height)):
                with b.loop("s", Const(kw, I64)) as s:
                    iw = b.let("iw", add(iw0, s))
                    with b.guard(left + right > 0, in_range(iw, width)):
                        tap = add(mul(r, Const(kw, I64)), s)
                        with b.guard(sampling is not None, sampling and (
                                tap % Const(sampling[0], I64)).ne(Const(sampling[1], I64))):
                            visit(acc, n, c, ih, iw)
        b.store("y", (n, c, oh, ow), result(acc))
    return replication_over(out_dims[:3])


def _lower_pool_rows(b: KernelBuilder, maximal: bool, result) -> tuple[Expr, ...] | None:
    """One instance per output row (n, c, oh).  Its window's input rows
    are folded (``maximal``: their maximum, else their sum) into a
    private row ``[left + W + right]``; then each output value is
    ``result(values, ih0, iw0)`` of its window's ``kw`` values of that
    row (ih0, iw0: the window's top-left corner).  A maximum's first row
    is the window's first in range (padding is smaller than the kernel),
    and its padding columns repeat the edge (a window reaching one holds
    the edge too); a sum's padding is zero.  None on targets without
    vector units (a GPU's work-item would keep the row in slow private
    memory), for a symbolic width, a row over MAX_ROW_ELEMENTS or a
    sampled window."""
    (kh, kw), (sh, sw), (top, left, bottom, right) = _pool_attrs(b.ctx)
    _, _, height, width = b.dims("x")
    fixed_width = const_value(width)
    if not b.tiles.vectors or fixed_width is None or pool_sampling(b.ctx) is not None \
            or left + fixed_width + right > MAX_ROW_ELEMENTS:
        return None
    out_dims = b.dims("y")
    _, (n, c, oh) = b.instance_indices(out_dims[:3], ["n", "c", "oh"])
    ih0 = b.let("ih0", add(mul(oh, Const(sh, I64)), Const(-top, I64)))
    element, row, pitch = b.element("x"), b.fresh("window_rows"), left + fixed_width + right
    b.emit(ArrayDecl(row, element, (pitch,), "private"))

    def at(j: int | Expr) -> Expr:
        """Column ``j`` of the row (an input column's index shifted by ``left``)."""
        return Const(j, I64) if isinstance(j, int) else add(j, Const(left, I64))
    if not maximal:
        with b.loop("j", Const(pitch, I64), unroll=1, ivdep=True) as j:
            b.store(row, (j,), b.const(0, "x"))
    for r in range(kh):
        first = maximal and r == 0
        ih = b.let("ih", maximum(ih0, Const(0, I64)) if first else add(ih0, Const(r, I64)))
        with b.guard(not first and (r > 0 or top > 0), in_range(ih, height)):
            with b.loop("iw", width, unroll=1, ivdep=True) as iw:
                value = b.load("x", n, c, ih, iw)
                if not first:
                    old = Load(row, (at(iw),), element)
                    value = maximum(old, value) if maximal else old + value
                b.store(row, (at(iw),), value)
    if maximal:
        for j in range(left):
            b.store(row, (at(j),), Load(row, (at(left),), element))
        for j in range(left + fixed_width, pitch):
            b.store(row, (at(j),), Load(row, (at(left + fixed_width - 1),), element))
    with b.loop("ow", out_dims[3], unroll=1, ivdep=True) as ow:
        start = mul(ow, Const(sw, I64))
        values = [Load(row, (add(start, Const(s, I64)),), element) for s in range(kw)]
        b.store("y", (n, c, oh, ow), result(values, ih0, add(start, Const(-left, I64))))
    return replication_over(out_dims[:3])


def _lower_max_pool_channels_last(b: KernelBuilder) -> tuple[Expr, ...] | None:
    """One instance per output row (n, oh) of an input the caller stores
    channels-last (its result either way); for each output pixel, a loop over the
    channels (vectors, where they are consecutive) takes the maximum of
    the window's cells.  A cell in the padding reads the nearest cell of
    the image instead, which lies in the window too (padding is smaller
    than the kernel), so no cell needs a guard.  None for symbolic sizes
    but the batch, a target without vectors, a sampled window, or an
    input stored NCHW (its channels a plane apart, each vector of them a
    gather: ResNet's pool after its stem ran 7x slower so)."""
    (kh, kw), (sh, sw), (top, left, _, _) = _pool_attrs(b.ctx)
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("y")[2:])
    if sizes is None or not b.tiles.vectors or pool_sampling(b.ctx) is not None \
            or not b.asks_channels_last("x"):
        return None
    channels, height, width, out_h, out_w = sizes
    x_last, y_last = b.stored_channels_last("x"), b.stored_channels_last("y")
    instance = b.let("i", InstanceId(0))
    oh, n = b.let("oh", instance % i64(out_h)), b.let("n", div(instance, i64(out_h)))
    ih0 = b.let("ih0", add(mul(oh, i64(sh)), i64(-top)))
    rows = [b.let("ih", minimum(maximum(add(ih0, i64(r)), i64(0)), i64(height - 1)))
            for r in range(kh)]
    with b.loop("ow", i64(out_w)) as ow:
        iw0 = b.let("iw0", add(mul(ow, i64(sw)), i64(-left)))
        cells = [activation_index(n, i64(0), add(mul(ih, i64(width)), b.let(
            "iw", minimum(maximum(add(iw0, i64(s)), i64(0)), i64(width - 1)))),
            channels, height * width, x_last) for ih in rows for s in range(kw)]
        cells = [b.let("cell", cell) for cell in cells]
        at = b.let("at", activation_index(n, i64(0), add(mul(oh, i64(out_w)), ow), channels,
                                          out_h * out_w, y_last))
        with b.loop("c", i64(channels), unroll=1, ivdep=True) as c:
            offset = c if x_last else mul(c, i64(height * width))
            values = [b.load("x", add(cell, offset)) for cell in cells]
            total = values[0]
            for value in values[1:]:
                total = maximum(total, value)
            b.store("y", (add(at, c if y_last else mul(c, i64(out_h * out_w))),), total)
    return (mul(b.dim("x", 0), i64(out_h)),)


def _lower_max_pool(b: KernelBuilder) -> tuple[Expr, ...]:
    def greatest(values, ih0, iw0):
        total = values[0]
        for value in values[1:]:
            total = maximum(total, value)
        return total
    rows = _lower_max_pool_channels_last(b)
    if rows is not None:
        return rows
    rows = _lower_pool_rows(b, True, greatest)
    if rows is not None:
        return rows
    zero = Const(0, I64)

    kw = _pool_attrs(b.ctx)[0][1]
    first = _kept_taps(b.ctx).index(True)

    def start(n, c, ih0, iw0):
        # Padding is smaller than the kernel, so the clamped corner is a
        # cell of the window: a finite start value, no -inf constant.  A
        # sampled window (no padding) starts at its first kept cell.
        if first:
            return b.let("acc", b.load("x", n, c, add(ih0, Const(first // kw, I64)),
                                       add(iw0, Const(first % kw, I64))))
        return b.let("acc", b.load("x", n, c, maximum(ih0, zero), maximum(iw0, zero)))

    def visit(acc, n, c, ih, iw):
        b.assign(acc, maximum(acc, b.load("x", n, c, ih, iw)))

    return _lower_pool(b, start, visit, lambda acc: acc)


def _lower_avg_pool_channels_last(b: KernelBuilder) -> tuple[Expr, ...] | None:
    """One instance per output row (n, oh) of an input the caller stores
    channels-last, without padding (global pooling, where the result
    is the same stored either way); for each output pixel a private row
    of sums, one per channel, gathers the window's cells a vector of
    channels at a time, then is divided into the result.  None as
    _lower_max_pool_channels_last, and for padding."""
    (kh, kw), (sh, sw), padding = _pool_attrs(b.ctx)
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("y")[2:])
    if sizes is None or not b.tiles.vectors or pool_sampling(b.ctx) is not None \
            or any(padding) or not b.asks_channels_last("x"):
        return None
    channels, height, width, out_h, out_w = sizes
    b.stored_channels_last("x")
    y_last = b.stored_channels_last("y")
    block = _channel_block(b, channels, out_h)
    instance = b.let("i", InstanceId(0))
    oh, rest = b.let("oh", instance % i64(out_h)), b.let("rest", div(instance, i64(out_h)))
    c0 = b.let("c0", mul(rest % i64(channels // block), i64(block)))
    n = b.let("n", div(rest, i64(channels // block)))
    element, sums = b.element("x"), b.fresh("sums")
    b.emit(ArrayDecl(sums, element, (block,), "private", zeroed=False))
    with b.loop("ow", i64(out_w)) as ow:
        with b.loop("c", i64(block), unroll=1, ivdep=True) as c:
            b.store(sums, (c,), b.const(0, "x"))
        with b.loop("r", i64(kh)) as r:
            row = b.let("row", add(mul(oh, i64(sh)), r))
            with b.loop("s", i64(kw)) as s:
                cell = b.let("cell", activation_index(
                    n, c0, add(mul(row, i64(width)), add(mul(ow, i64(sw)), s)), channels,
                    height * width, True))
                with b.loop("c", i64(block), unroll=1, ivdep=True) as c:
                    b.store(sums, (c,), Load(sums, (c,), element) + b.load("x", add(cell, c)))
        at = b.let("at", activation_index(n, c0, add(mul(oh, i64(out_w)), ow), channels,
                                          out_h * out_w, y_last))
        with b.loop("c", i64(block), unroll=1, ivdep=True) as c:
            b.store("y", (add(at, c if y_last else mul(c, i64(out_h * out_w))),),
                    Load(sums, (c,), element) / b.const(kh * kw))
    return (mul(b.dim("x", 0), i64(out_h * (channels // block))),)


def _channel_block(b: KernelBuilder, channels: int, out_h: int) -> int:
    """Channels an instance of a channels-last pool takes: all of them, or
    the largest block of whole vectors that gives every core an instance
    (global pooling has one output row per image: at batch 1 it ran on
    one core)."""
    rows = (const_value(b.dim("x", 0)) or 1) * out_h
    blocks = [d for d in range(channels, 0, -1)
              if channels % d == 0 and (d % b.tiles.cols == 0 or d == channels)]
    return next((d for d in blocks if rows * (channels // d) >= b.tiles.cores), blocks[-1])


def _lower_avg_pool(b: KernelBuilder) -> tuple[Expr, ...]:
    rows = _lower_avg_pool_channels_last(b)
    if rows is not None:
        return rows
    (kh, kw), _, padding = _pool_attrs(b.ctx)
    counted = any(padding) and not b.ctx.flag_attr("count_include_pad")
    _, _, height, width = b.dims("x")

    def cells(corner: Expr, extent: int, size: Expr) -> Expr:
        """How many of a window's ``extent`` positions from ``corner`` lie in [0, size)."""
        return add(minimum(add(corner, Const(extent, I64)), size),
                   mul(maximum(corner, Const(0, I64)), Const(-1, I64)))

    def mean(values, ih0, iw0):
        total = values[0]
        for value in values[1:]:
            total = total + value
        if not counted:
            return total / b.const(kh * kw)
        return total / Cast(mul(cells(ih0, kh, height), cells(iw0, kw, width)), b.element("y"))
    rows = _lower_pool_rows(b, False, mean)
    if rows is not None:
        return rows

    def start(n, c, ih0, iw0):
        total = b.let("total", b.const(0))
        return total, (b.let("count", Const(0, I64)) if counted else None)

    def visit(acc, n, c, ih, iw):
        total, count = acc
        b.assign(total, total + b.load("x", n, c, ih, iw))
        if counted:
            b.assign(count, count + Const(1, I64))

    def result(acc):
        total, count = acc
        return total / (Cast(count, b.element("y")) if counted
                        else b.const(sum(_kept_taps(b.ctx))))

    return _lower_pool(b, start, visit, result)


MAX_POOL = TensorOpSpec(
    "max_pool", ("x",), ("y",), _infer_pool(float_only=False), _evaluate_max_pool,
    _lower_max_pool, layout_ports=("x", "y"),
    attrs={"kernel": REQUIRED, "stride": (1, 1), "padding": (0, 0, 0, 0), "sample": ()},
    summary="2-D max pooling, NCHW (ONNX MaxPool)")

AVG_POOL = TensorOpSpec(
    "avg_pool", ("x",), ("y",), _infer_pool(float_only=True), _evaluate_avg_pool,
    _lower_avg_pool, layout_ports=("x", "y"),
    attrs={"kernel": REQUIRED, "stride": (1, 1), "padding": (0, 0, 0, 0),
           "count_include_pad": False, "sample": ()},
    summary="2-D average pooling, NCHW (ONNX AveragePool)")

OPS = (MAX_POOL, AVG_POOL)
