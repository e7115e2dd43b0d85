"""conv2d: 2-D convolution over NCHW inputs (ONNX Conv).

Ports: x [N, C, H, W], w [K, C/groups, R, S], optional b [K], optional z
[N, K, OH, OW]; y [N, K, OH, OW] with OH = (H + top + bottom - dh*(R-1) - 1)
/ sh + 1 (OW likewise).  ``z`` is a residual summand, added to each sum
before the activation (operator fusion moves ResNet's ``relu(conv(x) +
identity)`` in, as oneDNN's sum post-op and onnxruntime's FusedConv do).
Attributes: stride [sh, sw], padding [top, left, bottom, right],
dilation [dh, dw], groups, activation (activation.py: none, relu, tanh,
sigmoid or a clip, applied to each result; set by operator fusion).

Approximations (ApproxHPVM; default ``()``, exact): ``perforate_rows`` /
``perforate_cols`` ``(every, offset)`` compute only the kept output rows /
columns, stored compactly (perforation.py: a perforation_fill node expands
them); ``sample_filter`` ``(every, offset)`` skips the filter taps whose
index ``(c * R + r) * S + s`` within a filter has ``index % every ==
offset`` and scales the sum of the others by ``every / (every - 1)``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernel import Const, Expr
from ..types import I64, BufferType
from . import conv_depthwise, conv_grouped, conv_panels, conv_products, tiled
from .channels_last import moved_index
from .activation import (
    Activation, activation_attr, apply_kernel, apply_numpy, channel_result, with_summand,
)
from .dims import describe, require_concrete, require_equal, window_dim
from .lowering import KernelBuilder, add, const_value, in_range, mul, replication_over
from .matrix_tiles import MatrixView, Product, lower_row_tiles
from .packed_products import lower_packed_product
from .perforation import (
    approximated, kept_positions, perforated, real_position, sampled_sum, sampled_tap,
    skip_pattern,
)
from .spec import OpContext, TensorOpSpec

MIN_PACKED_PIXELS_TILES = 8
"""Fewest pixels, in vectors, of a 1x1 convolution lowered as a packed
product."""
MIN_TRANSPOSED_CHANNELS = 128
"""Fewest input channels of a 1x1 convolution of a wide image computed
transposed: its tiles are stored through a private copy (an output
channel's pixels are consecutive, a tile's are not), and the channels'
multiply-adds must outweigh that (one core, ResNet-50's layers: 128 to
2048 channels 46-83 -> 95-117 GFLOP/s; 64 channels at 56x56 96 -> 80).
Images narrower than a register tile are computed transposed whatever
their channels (two cores, MobileNetV2's 64 -> 384 channels at 14x14:
40 -> 142 GFLOP/s)."""


def window_attrs(ctx: OpContext, dilation: bool = True):
    """(stride, padding[, dilation]) of a conv or pool, checked."""
    stride = ctx.ints_attr("stride", 2, minimum=1)
    padding = ctx.ints_attr("padding", 4, minimum=0)
    if not dilation:
        return stride, padding
    return stride, padding, ctx.ints_attr("dilation", 2, minimum=1)


def _check_channels(ctx: OpContext, groups: int) -> None:
    channels, per_group = ctx.shape("x")[1], ctx.shape("w")[1]
    kernels = ctx.shape("w")[0]
    if groups == 1:
        if channels != per_group:
            ctx.fail(f"input 'w' has {describe(per_group)} channels per group but 'x' has "
                     f"{describe(channels)}", "make w.shape[1] equal x.shape[1] / groups", "w")
        return
    channels = require_concrete(ctx, channels, "the channel count of 'x' (groups > 1)", "x")
    kernels = require_concrete(ctx, kernels, "the output channel count of 'w' (groups > 1)", "w")
    if channels % groups or kernels % groups:
        ctx.fail(f"groups={groups} must divide the channels of 'x' ({channels}) and of "
                 f"'w' ({kernels})", "choose groups dividing both channel counts")
    if per_group != channels // groups:
        ctx.fail(f"input 'w' has {describe(per_group)} channels per group but 'x' has "
                 f"{channels // groups}", "make w.shape[1] equal x.shape[1] / groups", "w")


def _infer_conv2d(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    ctx.expect_rank("x", 4)
    ctx.expect_rank("w", 4)
    activation_attr(ctx)
    stride, padding, dilation = window_attrs(ctx)
    groups = ctx.int_attr("groups", minimum=1)
    _check_channels(ctx, groups)
    batch, _, height, width = ctx.shape("x")
    kernels, _, rows, cols = ctx.shape("w")
    rows = require_concrete(ctx, rows, "the kernel height (w.shape[2])", "w")
    cols = require_concrete(ctx, cols, "the kernel width (w.shape[3])", "w")
    if ctx.has("b"):
        ctx.expect_rank("b", 1)
        require_equal(ctx, ctx.shape("b")[0], kernels, "the length of 'b'",
                      "the output channels of 'w'", "b")
    out_h = window_dim(ctx, height, dilation[0] * (rows - 1) + 1, stride[0],
                      padding[0] + padding[2], "height", "x")
    out_w = window_dim(ctx, width, dilation[1] * (cols - 1) + 1, stride[1],
                      padding[1] + padding[3], "width", "x")
    skip_pattern(ctx, "sample_filter")
    perforation = skip_pattern(ctx, "perforate_rows"), skip_pattern(ctx, "perforate_cols")
    out_h = perforated(ctx, out_h, perforation[0])
    out_w = perforated(ctx, out_w, perforation[1])
    if ctx.has("z"):
        if perforation != (None, None):
            ctx.fail("a convolution with a residual summand 'z' cannot be perforated",
                     "perforate a convolution without 'z', or use filter sampling", "z")
        _check_summand(ctx, (batch, kernels, out_h, out_w))
    return {"y": BufferType(element, (batch, kernels, out_h, out_w))}


def _check_summand(ctx: OpContext, shape: tuple) -> None:
    ctx.expect_rank("z", 4)
    for axis, (have, want) in enumerate(zip(ctx.shape("z"), shape)):
        require_equal(ctx, have, want, f"dimension {axis} of 'z'",
                      f"dimension {axis} of the result", "z")


def full_output_size(ctx: OpContext) -> tuple:
    """(OH, OW) before perforation."""
    exact = OpContext(ctx.spec, ctx.types, {**ctx.attrs, "perforate_rows": (),
                                           "perforate_cols": ()}, ctx.node)
    return _infer_conv2d(exact)["y"].shape[2:]


def sampled_filter(w: np.ndarray, every: int, offset: int) -> np.ndarray:
    """``w`` with the skipped taps zeroed and the others scaled by
    every / (every - 1)."""
    index = np.arange(int(np.prod(w.shape[1:]))).reshape(w.shape[1:])
    keep = (index % every != offset).astype(w.dtype)
    return w * keep * w.dtype.type(every / (every - 1))


def conv2d_sum(x: np.ndarray, w: np.ndarray, stride, padding, dilation, groups: int,
               out_hw: tuple[int, int]) -> np.ndarray:
    """The convolution's sums (no bias, no activation) in ``x``'s dtype:
    one kernel tap at a time over all output pixels.  Also the NVDLA
    emulator's (int64 and FP32 accumulators)."""
    (sh, sw), (top, left, bottom, right), (dh, dw) = stride, padding, dilation
    out_h, out_w = out_hw
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    kernels, per_group, rows, cols = w.shape
    per_group_out = kernels // groups
    y = np.zeros((x.shape[0], kernels, out_h, out_w), dtype=x.dtype)
    for g in range(groups):
        xg = padded[:, g * per_group:(g + 1) * per_group]
        wg = w[g * per_group_out:(g + 1) * per_group_out]
        for r in range(rows):
            for s in range(cols):
                patch = xg[:, :, r * dh:r * dh + sh * (out_h - 1) + 1:sh,
                           s * dw:s * dw + sw * (out_w - 1) + 1:sw]
                y[:, g * per_group_out:(g + 1) * per_group_out] += np.einsum(
                    "nchw,kc->nkhw", patch, wg[:, :, r, s])
    return y


def _evaluate_conv2d(ctx: OpContext, arrays: dict) -> dict:
    out_h, out_w = full_output_size(ctx)
    weights = arrays["w"]
    sampling = skip_pattern(ctx, "sample_filter")
    if sampling is not None:
        weights = sampled_filter(weights, *sampling)
    y = conv2d_sum(arrays["x"], weights, *window_attrs(ctx), ctx.int_attr("groups"),
                   (out_h, out_w))
    for axis, name, size in ((2, "perforate_rows", out_h), (3, "perforate_cols", out_w)):
        pattern = skip_pattern(ctx, name)
        if pattern is not None:
            y = np.take(y, kept_positions(size, *pattern), axis)
    if "b" in arrays:
        y += arrays["b"].reshape(1, -1, 1, 1)
    if "z" in arrays:
        y += arrays["z"]
    return {"y": apply_numpy(activation_attr(ctx), y)}


def _lower_conv2d(b: KernelBuilder) -> tuple[Expr, ...]:
    """On vector targets, panels for small images (conv_panels.py) and
    pixel tiles for grouped convolutions (conv_grouped.py); the row-tiled
    lowering where shapes allow; else one instance per output element."""
    groups = b.ctx.int_attr("groups")
    activation = activation_attr(b.ctx)
    attrs = window_attrs(b.ctx)
    if groups == 1:
        replication = _lower_pointwise_conv2d(b, attrs, activation)
        if replication is None:
            replication = conv_products.lower_conv2d_product(b, *attrs, activation)
        if replication is None:
            replication = conv_panels.lower_conv2d_panels(b, *attrs, activation)
    else:
        replication = conv_depthwise.lower_depthwise_channels_last(b, *attrs, groups, activation)
        if replication is None:
            replication = conv_grouped.lower_conv2d_grouped(b, *attrs, groups, activation)
    if replication is None:
        replication = tiled.lower_conv2d(b, *attrs, groups, activation)
    return replication if replication is not None else _lower_conv2d_reference(b)


def _lower_pointwise_conv2d(b: KernelBuilder, attrs, activation: Activation
                            ) -> tuple[Expr, ...] | None:
    """A 1x1 convolution without padding is a matrix product per image,
    w [K, C] @ x [C, H*W].  With constant weights the caller lets the
    lowering relay (KernelBuilder.relayout), on images narrower than a
    register tile or with channels enough (MIN_TRANSPOSED_CHANNELS), it
    is computed transposed, x' [H*W, C] @ w' [C, K], packed
    (packed_products.py) with w' packed once when compiling: pixels are
    the tiles' rows, read as consecutive values of a channel, and output
    channels their columns.  At a stride, each row reads the pixel the
    stride puts it at (MatrixView.pixels): ResNet's downsampling layers,
    where the copies of conv_products.py and conv_panels.py cost more
    than the products.  Otherwise, at a stride of 1, it is packed as it
    stands for images whose rows are narrower than a register tile
    (the row tiles fill their vectors on wider ones, and measured faster
    there: 64 against 47 GFLOP/s at 112x112) but with pixels for several
    packed tiles (the panels, conv_panels.py, did as well at 7x7; 71
    against 46 GFLOP/s packed at 14x14, 96 to 576 channels); None
    otherwise."""
    stride, padding, _ = attrs
    batch, channels, height, width = b.dims("x")
    kernels = b.dim("w", 0)
    out_h, out_w = b.dims("y")[2:]
    fixed_width, pixels = const_value(out_w), mul(out_h, out_w)
    if any(padding) or [const_value(d) for d in b.dims("w")[2:]] != [1, 1] \
            or approximated(b.ctx) or not b.tiles.vectors:
        return None
    strided = None
    if stride != (1, 1):
        sizes = [const_value(d) for d in (out_w, width, height)]
        if None in sizes:
            return None
        strided = (sizes[0], sizes[1], stride[0], stride[1], sizes[2])

    narrow = fixed_width is not None and fixed_width < b.tiles.cols
    x_last, y_last = b.asks_channels_last("x"), b.asks_channels_last("y")
    z_last = b.asks_channels_last("z")
    fixed_pixels, fixed_kernels = const_value(pixels), const_value(kernels)
    if "z" in b.types and None in (fixed_pixels, fixed_kernels):
        z_last = y_last = y_last and z_last  # z read at y's index

    def finish(b: KernelBuilder, q: Expr, k: Expr, total: Expr, at: Expr) -> Expr:
        at_z = moved_index(at, fixed_kernels, fixed_pixels, y_last, z_last) \
            if "z" in b.types and z_last != y_last else None
        return channel_result(b, activation, k, total, at, at_z)
    if b.constant("w") is not None and (
            x_last or y_last or narrow or (const_value(channels) or 0) >= MIN_TRANSPOSED_CHANNELS):
        product = Product(MatrixView("x", (batch,), pixels, channels, transposed=not x_last,
                                     pixels=strided),
                          MatrixView("w", (), channels, kernels, transposed=True),
                          MatrixView("y", (batch,), pixels, kernels, transposed=not y_last),
                          (batch,), finish, reads_results="z" in b.types)
        replication = lower_packed_product(b, product)
        if replication is None and (x_last or y_last):
            # too small to pack: row tiles over the weights as [C, K]
            weights = b.constant("w")
            b.relayout("w", weights.reshape(weights.shape[0], -1).T)
            product = dataclasses.replace(product, b=MatrixView("w", (), channels, kernels))
            replication = lower_row_tiles(b, product)
        if replication is not None:
            for port, last in (("x", x_last), ("y", y_last), ("z", z_last)):
                if last:
                    b.stored_channels_last(port)
            return replication
    few_pixels = (const_value(pixels) or 0) < MIN_PACKED_PIXELS_TILES * b.tiles.cols
    if strided is not None or not narrow or few_pixels:
        return None
    product = Product(MatrixView("w", (), kernels, channels),
                      MatrixView("x", (batch,), channels, pixels),
                      MatrixView("y", (batch,), kernels, pixels), (batch,),
                      lambda b, k, q, total, at: channel_result(b, activation, k, total, at))
    return lower_packed_product(b, product)


def _lower_conv2d_reference(b: KernelBuilder) -> tuple[Expr, ...]:
    (sh, sw), (top, left, bottom, right), (dh, dw) = window_attrs(b.ctx)
    groups = b.ctx.int_attr("groups")
    _, _, height, width = b.dims("x")
    kernels, per_group, rows, cols = b.dims("w")
    out_dims = b.dims("y")
    i, (n, k, oh, ow) = b.instance_indices(out_dims, ["n", "k", "oh", "ow"])
    oh, ow = output_position(b, oh, "rows"), output_position(b, ow, "cols")
    sampling = skip_pattern(b.ctx, "sample_filter")
    first_channel: Expr = Const(0, I64)
    if groups > 1:
        group = b.let("g", k / Const(kernels.value // groups, I64))
        first_channel = b.let("c0", mul(group, per_group))
    bias = b.load("b", k) if "b" in b.types else None
    acc = b.let("acc", bias if bias is not None and sampling is None else b.const(0.0))
    ih0 = b.let("ih0", add(mul(oh, Const(sh, I64)), Const(-top, I64)))
    iw0 = b.let("iw0", add(mul(ow, Const(sw, I64)), Const(-left, I64)))
    with b.loop("c", per_group) as c:
        with b.loop("r", rows) as r:
            ih = b.let("ih", add(ih0, mul(r, Const(dh, I64))))
            with b.guard(top + bottom > 0, in_range(ih, height)):
                with b.loop("s", cols) as s:
                    iw = b.let("iw", add(iw0, mul(s, Const(dw, I64))))
                    with b.guard(left + right > 0, in_range(iw, width)):
                        with sampled_tap(b, sampling, (c, r, s), (rows, cols)):
                            pixel = b.load("x", n, add(first_channel, c), ih, iw)
                            b.assign(acc, acc + pixel * b.load("w", k, c, r, s))
    # Without sampling the bias started the sum.
    late_bias = bias if sampling is not None else None
    result = with_summand(b, sampled_sum(b, acc, late_bias, sampling), i)
    b.store("y", i, apply_kernel(activation_attr(b.ctx), result))
    return replication_over(out_dims)


def output_position(b: KernelBuilder, index: Expr, axis: str) -> Expr:
    """The real output row (``axis`` "rows") or column of compact
    ``index``."""
    pattern = skip_pattern(b.ctx, f"perforate_{axis}")
    return index if pattern is None else b.let(f"real_{axis}", real_position(index, *pattern))


CONV2D = TensorOpSpec(
    "conv2d", ("x", "w"), ("y",), _infer_conv2d, _evaluate_conv2d, _lower_conv2d,
    optional_inputs=("b", "z"), layout_ports=("x", "y", "z"),
    attrs={"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
           "activation": "none", "perforate_rows": (), "perforate_cols": (),
           "sample_filter": ()},
    summary="2-D convolution, NCHW (ONNX Conv)")

OPS = (CONV2D,)
