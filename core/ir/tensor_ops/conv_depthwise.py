"""Depthwise convolutions (one input channel per output channel) of
activations stored channels-last, for targets with vector units
(``RegisterTiles.vectors``): the vector lanes run across channels, as
XNNPACK's and oneDNN's depthwise kernels do, where conv_grouped.py runs
them across the pixels of one channel.

An instance takes one image, a block of ``block`` channels and a band of
output rows.  For each output pixel a loop over its channels sums every
tap in its body: a vector of weights (relaid ``[R S][C]`` when
compiling, where they are a constant) and one of inputs per tap, the sum
in a register, stored once.  PIXELS neighbouring pixels share a body, so
that a weight is loaded once for all of them and, at a stride of 1, an
input value once for the taps of several pixels that read it.

A channels-last input is read in place.  Pixels whose window lies inside
the image (fixed ranges of columns, on rows whose window lies inside)
read it without a check; the others, on the borders, read each tap's
nearest cell of the image and take zero for a tap in the padding.  An
NCHW input (the first depthwise layer after one stored so) is first
copied, for the band's rows and the block's channels, into a private
array ``[rows][padded width][block]`` whose zeros are the padding, which
every pixel then reads without a check.  A result stored NCHW is written
by the same code (KernelBuilder.stored_channels_last).
"""
from __future__ import annotations

from typing import Callable

from ..kernel import ArrayDecl, Binary, Expr, InstanceId, Load, Select, Unary
from .activation import Activation, channel_result
from .channels_last import activation_index
from .lowering import KernelBuilder, add, const_value, div, in_range, maximum, minimum, mul
from .perforation import approximated
from .tiled import fixed_sizes, i64

COPY_ELEMENTS = 32768
"""Largest private copy of input rows an instance makes (elements; 128
KiB of f32, in a core's L2)."""
PIXELS = 4
"""Neighbouring output pixels summed in one body of the channel loop."""
BAND_ELEMENTS = 32768
"""Most input values (rows read by a band, times its channels) an
instance reading a channels-last input in place works on: a band's rows
stay in a core's L2 while its pixels read them again."""


def lower_depthwise_channels_last(b: KernelBuilder, stride, padding, dilation, groups: int,
                                  activation: Activation) -> tuple[Expr, ...] | None:
    """The lowering in the module's text, for a depthwise convolution one
    of whose activations the caller stores channels-last; None otherwise
    (symbolic sizes but the batch, a target without vectors,
    approximations, several output channels per input channel)."""
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("w") + b.dims("y")[1:])
    if sizes is None or not b.tiles.vectors or approximated(b.ctx) or not any(
            b.asks_channels_last(port) for port in ("x", "y", "z")):
        return None
    channels, height, width, kernels, per_group, rows, cols, _, out_h, out_w = sizes
    if groups != channels or kernels != channels or per_group != 1:
        return None
    x_last, y_last = b.stored_channels_last("x"), b.stored_channels_last("y")
    z_last = b.stored_channels_last("z")
    (sh, sw), (_, left, _, right), (dh, dw) = stride, padding, dilation
    pitch = width + (0 if x_last else left + right)
    block, band = _work(b, channels, out_h, out_w, sh, dh, rows, rows * cols, pitch,
                        BAND_ELEMENTS if x_last else COPY_ELEMENTS, not x_last)
    blocks, bands = channels // block, -(-out_h // band)

    instance = b.let("i", InstanceId(0))
    oh0 = b.let("oh0", mul(instance % i64(bands), i64(band)))
    rest = b.let("rest", div(instance, i64(bands)))
    c0 = b.let("c0", mul(rest % i64(blocks), i64(block))) if blocks > 1 else i64(0)
    n = b.let("n", div(rest, i64(blocks))) if blocks > 1 else rest
    copy = None if x_last else _copy_rows(
        b, n, c0, oh0, (channels, height, width, block), stride, padding,
        (band - 1) * sh + dh * (rows - 1) + 1)
    weights = b.constant("w")
    if weights is not None:
        b.relayout("w", weights.reshape(channels, rows * cols).T)

    def weight(tap: int, k: Expr) -> Expr:
        if weights is not None:
            return b.load("w", add(i64(tap * channels), k))
        return b.load("w", k, i64(0), i64(tap // cols), i64(tap % cols))

    taps = [(r, s) for r in range(rows) for s in range(cols)]

    def pixels(oh: Expr, ow: Expr, count: int, read: Callable) -> None:
        """Sum the windows of pixels (oh, ow + p), p < ``count``, whose tap
        (r, s) reads ``read(p, r, s, c)`` at the block's channel ``c``."""
        q = b.let("q", add(mul(oh, i64(out_w)), ow))
        with b.loop("c", i64(block), unroll=1, ivdep=True) as c:
            k = b.let("k", add(c0, c))
            for p in range(count):
                total = None
                for tap, (r, s) in enumerate(taps):
                    term = read(p, r, s, c) * weight(tap, k)
                    total = term if total is None else total + term
                pixel = add(q, i64(p))
                at = activation_index(n, k, pixel, channels, out_h * out_w, y_last)
                at_z = activation_index(n, k, pixel, channels, out_h * out_w, z_last) \
                    if z_last != y_last and "z" in b.types else None
                b.store("y", (at,), channel_result(b, activation, k, total, at, at_z))

    with b.loop("oh", i64(band)) as local:
        oh = b.let("oh", add(oh0, local))
        with b.guard(bands * band != out_h, oh.lt(i64(out_h))):
            if copy is None:
                _rows_in_place(b, pixels, n, c0, oh, (channels, height, width, out_w),
                               stride, padding, dilation, (rows, cols))
            else:
                def read(p: int, r: int, s: int, c: Expr, ow: Expr) -> Expr:
                    at = add(mul(add(mul(local, i64(sh)), i64(r * dh)), i64(pitch)),
                             add(mul(ow, i64(sw)), i64(p * sw + s * dw)))
                    return Load(copy, (add(mul(at, i64(block)), c),), b.element("x"))
                _blocked(b, i64(0), out_w, lambda ow, count: pixels(
                    oh, ow, count, lambda p, r, s, c: read(p, r, s, c, ow)))
    return (mul(b.dim("x", 0), i64(blocks * bands)),)


def _blocked(b: KernelBuilder, start: Expr, count: int, emit: Callable,
             remainder: bool = True) -> None:
    """``emit(ow, pixels)`` over ``count`` columns from ``start``: PIXELS
    at a time, then (``remainder``) one at a time."""
    steps = count // PIXELS
    if steps:
        with b.loop("ow", i64(steps)) as step:
            emit(b.let("ow", add(start, mul(step, i64(PIXELS)))), PIXELS)
    if remainder and count % PIXELS:
        with b.loop("ow", i64(count), start=i64(steps * PIXELS)) as ow:
            emit(b.let("ow", add(start, ow)), 1)


def _rows_in_place(b: KernelBuilder, pixels: Callable, n: Expr, c0: Expr, oh: Expr, sizes,
                   stride, padding, dilation, window) -> None:
    """The pixels of output row ``oh`` reading a channels-last input in
    place: on a row whose window rows lie inside the image, the inner
    columns PIXELS at a time without a check; the other columns of that
    row, and every column of other rows, one at a time with a check of
    each tap (two bodies in all: with one per kind of border, MobileNetV2
    compiled a third slower than with its NCHW depthwise kernels)."""
    channels, height, width, out_w = sizes
    (sh, sw), (top, left, _, _), (dh, dw) = stride, padding, dilation
    rows, cols = window
    first = min(out_w, -(-left // sw))  # the first column whose window lies inside
    last = max(first, min(out_w, (width - 1 - dw * (cols - 1) + left) // sw + 1))
    blocked_end = first + (last - first) // PIXELS * PIXELS
    ih0 = b.let("ih0", add(mul(oh, i64(sh)), i64(-top)))
    image = b.let("image", mul(n, i64(height)))
    row_inside = [b.let("row_inside", in_range(add(ih0, i64(r * dh)), i64(height)))
                  for r in range(rows)]
    inside_rows = b.let("inside_rows", Binary("land", row_inside[0], row_inside[-1]))
    # the flat index of channel c0 in column 0 of each window row, clamped
    lines = [b.let("line", add(mul(add(image, minimum(maximum(add(ih0, i64(r * dh)), i64(0)),
                                                      i64(height - 1))),
                                   i64(width * channels)), c0)) for r in range(rows)]

    def read(p: int, r: int, s: int, c: Expr, ow: Expr) -> Expr:
        iw = add(mul(ow, i64(sw)), i64(p * sw + s * dw - left))
        return b.load("x", add(add(lines[r], mul(iw, i64(channels))), c))
    with b.when(inside_rows):
        _blocked(b, i64(first), blocked_end - first, lambda ow, count: pixels(
            oh, ow, count, lambda p, r, s, c: read(p, r, s, c, ow)), remainder=False)
    # checked: columns [0, first) and [blocked_end, out_w) of inside rows,
    # every column of the others
    outer = first + out_w - blocked_end
    checked = Select(inside_rows, i64(outer), i64(out_w))
    with b.loop("j", checked) as j:
        skip = Select(Binary("land", inside_rows, j.ge(i64(first))), i64(blocked_end - first),
                      i64(0))
        ow = b.let("ow", add(j, skip))
        cells = {}
        for r in range(rows):
            for s in range(cols):
                iw = b.let("iw", add(mul(ow, i64(sw)), i64(s * dw - left)))
                inside = b.let("inside", Binary("land", row_inside[r], in_range(iw, i64(width))))
                at = b.let("at", add(lines[r], mul(minimum(maximum(iw, i64(0)), i64(width - 1)),
                                                   i64(channels))))
                cells[r, s] = (inside, at)

        def checked_read(p: int, r: int, s: int, c: Expr) -> Expr:
            inside, at = cells[r, s]
            return Select(inside, b.load("x", add(at, c)), b.const(0.0, "x"))
        pixels(oh, ow, 1, checked_read)


def _copy_rows(b: KernelBuilder, n: Expr, c0: Expr, oh0: Expr, sizes, stride, padding,
               copy_rows: int) -> str:
    """Copy the NCHW input rows the instance reads, for its block of
    channels, into a private array ``[rows][padded width][block]``,
    writing zeros where the padding is (the array is not cleared first:
    a clear of the whole array per instance cost more than the copy);
    returns its name."""
    channels, height, width, block = sizes
    (sh, _), (top, left, _, right) = stride, padding
    pitch = width + left + right
    copy = b.fresh("rows")
    b.emit(ArrayDecl(copy, b.element("x"), (copy_rows * pitch * block,), "private",
                     zeroed=False))
    zero = b.const(0.0, "x")
    ih0 = b.let("ih0", add(mul(oh0, i64(sh)), i64(-top)))
    with b.loop("r", i64(copy_rows)) as r:
        ih = b.let("ih", add(ih0, r))
        row = b.let("row", mul(r, i64(pitch * block)))
        inside = in_range(ih, i64(height))
        with b.when(inside):
            for first, count in ((0, left), (left + width, right)):
                with b.loop("v", i64(count * block)) as v:
                    b.store(copy, (add(row, add(i64(first * block), v)),), zero)
            to = b.let("to", add(row, i64(left * block)))
            # each channel's row is a run of the input
            with b.loop("c", i64(block)) as c:
                channel = b.let("channel", add(c0, c))
                with b.loop("iw", i64(width), ivdep=True) as iw:
                    b.store(copy, (add(add(to, c), mul(iw, i64(block))),),
                            b.load("x", n, channel, ih, iw))
        with b.when(Unary("not", inside)):
            with b.loop("v", i64(pitch * block)) as v:
                b.store(copy, (add(row, v),), zero)
    return copy


def _work(b: KernelBuilder, channels: int, out_h: int, out_w: int, sh: int, dh: int,
          rows: int, taps: int, pitch: int, most: int, copies: bool) -> tuple[int, int]:
    """(channels per block, output rows per band): of the blocks of whole
    vectors and the bands whose rows read hold at most ``most`` values,
    those whose rounds of instances over the cores take least time, each
    instance its sums (a load of the input and of the weight per tap)
    and, where it ``copies`` its rows, that copy (a load and a store per
    value: a tall band copies its overlapping rows once, a band of one
    row at a stride of 1 copies every row three times)."""
    images = const_value(b.dim("x", 0)) or 1
    blocks = [d for d in range(channels, 0, -1)
              if channels % d == 0 and (d % b.tiles.cols == 0 or d == channels)]

    def read(block: int, band: int) -> int:
        return ((band - 1) * sh + dh * (rows - 1) + 1) * pitch * block

    def duration(choice: tuple[int, int]) -> tuple[int, int]:
        block, band = choice
        rounds = -(-images * (channels // block) * -(-out_h // band) // b.tiles.cores)
        copied = 2 * read(block, band) if copies else 0
        return rounds * (copied + band * out_w * block * (2 * taps + 1)), -block
    choices = [(block, band) for block in blocks for band in range(1, out_h + 1)
               if read(block, band) <= most]
    return min(choices, key=duration) if choices else (blocks[-1], 1)
