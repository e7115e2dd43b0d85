"""Convolutions with constant weights as packed matrix products computed
transposed, for targets with vector units (``RegisterTiles.vectors``):
y' [pixels, K] = patches [pixels, C*R*S] @ w' [C*R*S, K], w' packed once,
when compiling, into the runs packed products read
(packed_products.column_panels; KernelBuilder.relayout).

The tiles are as packed products make them: PACKED_ROWS output pixels x
PACKED_VECTORS vectors of output channels, so every image size fills the
vectors (the row tiles of tiled.py leave lanes idle on rows of 7 or 14
pixels, and the panels of conv_panels.py load the weights one at a time).
Per tap a tile loads one value per pixel, broadcast, and its vectors of
weights from the packed run.

An instance takes one image, a panel of output channels and a chunk of
output rows.  Each pixel of a tile reads tap (c, r, s) at its own offset
plus the tap's, whatever the stride or dilation, in one of:

- **the input itself**, without padding;
- **the input padded once** before the kernel, where the caller can
  (KernelBuilder.read_padded: the cpu target runs a pad kernel into a
  buffer of its own), for strided convolutions: ResNet's 3x3 layers of
  stride 2 on the lent Xeon's 16 cores, 256 channels at 28x28: 0.85 ->
  0.42 ms, and 6% off ResNet-50 at batch 1.  At a stride of 1 it
  measured neutral (PAD_AT_STRIDE_ONE);
- **a private copy** of the input rows the chunk reads,
  ``[C][rows][padded width]``, whose zeros are the padding, made by each
  instance (panels of output channels copy the same rows again).

Chunks are as many rows as take least time over the cores (rounds of
instances, each its multiply-adds and its copy), within COPY_ELEMENTS.
Results are stored through a private copy of each tile
(packed_products.py says why).
"""
from __future__ import annotations

from ..kernel import ArrayDecl, Expr, InstanceId, Load
from .activation import Activation, channel_result
from .channels_last import activation_index
from .lowering import KernelBuilder, add, const_value, div, in_range, minimum, mul
from .matrix_tiles import clamped_rows, in_groups, store_tile
from .packed_products import column_panels, packed_tile, panel_width
from .perforation import approximated
from .tiled import ArrayTile, column_tiles, fixed_sizes, i64

COPY_ELEMENTS = 65536
"""Largest private copy of input rows (elements; 256 KiB of f32, in a
core's L2)."""
MIN_TAPS = 128
"""Fewest taps (C * R * S) per result: fewer, and the tiles' copies and
stores outweigh the multiply-adds."""
MIN_CHANNELS = 16
"""Fewest input channels (a network's first layer, 3 channels and 7x7
taps, ran at 5 GFLOP/s this way, 100 as row tiles)."""
PAD_AT_STRIDE_ONE = False
"""Whether padded convolutions of stride 1 read an input padded once
before the kernel (KernelBuilder.read_padded) where the caller can, as
strided ones do, instead of copying padded rows per instance."""
COPY_SHARE = 0.55
"""Largest cost of an instance's input copy (a load and a store per
value) against its vector multiply-adds: an instance copies the rows of
every input channel for a panel of output channels, so deep layers with
few output pixels (7x7 after a stride of 2) copy as much as they compute.
Measured on the 2-core VM (one core / two), as panels (conv_panels.py)
-> this way: 1x1 stride 2, 1024 -> 2048 channels at 14x14 (a share of
1.5): 66 -> 52 GFLOP/s on one core; 3x3 stride 2, 512 channels at 14x14
(0.59): 141 -> 110 on two; 256 at 28x28 (0.56): 146 -> 137; 128 at
56x56 (0.54): 115 -> 157."""


def lower_conv2d_product(b: KernelBuilder, stride, padding, dilation,
                         activation: Activation) -> tuple[Expr, ...] | None:
    """The lowering in the module's text, for groups of 1; None where it
    does not suit (weights not a constant the caller lets this relay,
    symbolic sizes but the batch, few taps or output channels, a copy of
    one output row's input too large, approximations)."""
    weights = b.constant("w")
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("w") + b.dims("y")[1:])
    if weights is None or sizes is None or not b.tiles.vectors or approximated(b.ctx):
        return None
    channels, _, _, kernels, _, rows, cols, _, out_h, _ = sizes
    tile_rows, tile_cols = packed_tile(b.tiles)
    inner = channels * rows * cols
    if kernels < tile_cols or inner < MIN_TAPS or channels < MIN_CHANNELS:
        return None
    # An input stored channels-last is copied rather than padded by the
    # caller, whose pad kernel pads NCHW values.
    x_last = "x" in b.channels_last
    if any(padding) and not x_last and (PAD_AT_STRIDE_ONE or stride != (1, 1)) \
            and b.read_padded("x", (0, 0, padding[0], padding[1], 0, 0, padding[2],
                                    padding[3])):
        padding = (0, 0, 0, 0)
        sizes = fixed_sizes(b.dims("x")[1:]) + sizes[3:]
    width_k = panel_width(inner, kernels, tile_cols)
    panels = -(-kernels // width_k)
    chunk = _rows_per_instance(b, sizes, stride, padding, dilation, width_k, panels)
    if chunk is None:
        return None
    x_last, y_last = b.stored_channels_last("x"), b.stored_channels_last("y")
    z_last = b.stored_channels_last("z")
    channels, height, width, kernels, _, rows, cols, _, out_h, out_w = sizes
    (sh, sw), (_, left, _, right), (dh, _) = stride, padding, dilation
    pitch = width + left + right
    in_place = not any(padding)
    copy_rows = (chunk - 1) * sh + dh * (rows - 1) + 1
    # Taps in the order the input's channels lie: channels-last, the
    # channels of a pixel are the innermost steps.
    taps = weights.transpose(0, 2, 3, 1) if x_last else weights
    b.relayout("w", column_panels(taps.reshape(kernels, inner).T, tile_cols))
    chunks = -(-out_h // chunk)

    instance = b.let("i", InstanceId(0))
    k0 = b.let("k0", mul(instance % i64(panels), i64(width_k))) if panels > 1 else i64(0)
    rest = b.let("ib", div(instance, i64(panels))) if panels > 1 else instance
    oh0 = b.let("oh0", mul(rest % i64(chunks), i64(chunk))) if chunks > 1 else i64(0)
    n = b.let("n", div(rest, i64(chunks))) if chunks > 1 else rest

    # A pixel is ``depth`` values from the next, a channel ``plane_size``.
    depth = channels if x_last else 1
    if in_place:
        source, plane_size = "x", 1 if x_last else height * width
        origin = b.let("origin", add(mul(n, i64(channels * height * width)),
                                     mul(oh0, i64(sh * width * depth))))
    else:
        source, plane_size = _copy_rows(b, n, oh0, sizes, stride, padding, copy_rows, x_last)
        origin = i64(0)

    last_rows = out_h - (chunks - 1) * chunk
    pixels = (mul(i64(out_w), minimum(i64(chunk), add(i64(out_h), mul(oh0, i64(-1)))))
              if last_rows != chunk else i64(chunk * out_w))
    ragged = last_rows != chunk or (chunk * out_w) % tile_rows != 0
    first_pixel = b.let("q0", mul(oh0, i64(out_w)))
    blocks = div(add(pixels, i64(tile_rows - 1)), i64(tile_rows))
    element = b.element("x")

    def panel(start: Expr, count: int) -> None:
        with b.loop("rb", blocks) as block:
            m0 = b.let("m0", mul(block, i64(tile_rows)))
            ms = [add(m0, i64(r)) for r in range(tile_rows)]
            bases = []
            for q in clamped_rows(b, ms, pixels, ragged):
                oh, ow = div(q, i64(out_w)), q % i64(out_w)
                bases.append(b.let("at", add(origin, mul(add(mul(oh, i64(sh * pitch)),
                                                             mul(ow, i64(sw))), i64(depth)))))

            def tile(at: Expr, used: int) -> None:
                acc = ArrayTile(b, tile_rows, tile_cols)
                first = b.let("from", mul(add(start, at), i64(inner)))

                def tap(step: Expr, offset: Expr) -> None:
                    lhs = [b.let("av", Load(source, (add(base, offset),), element))
                           for base in bases]
                    run = b.let("run", add(first, mul(step, i64(tile_cols))))
                    acc.accumulate(lhs, lambda j: b.load("w", add(run, j)))
                if x_last:
                    _taps_channels_last(b, tap, channels, rows, cols, dilation, pitch)
                else:
                    _taps_by_plane(b, tap, channels, rows, cols, dilation, pitch, plane_size)

                def store(m: Expr, j: Expr, value: Expr) -> None:
                    k = add(add(start, at), j)
                    q = add(first_pixel, m)
                    at_y = activation_index(n, k, q, kernels, out_h * out_w, y_last)
                    at_z = activation_index(n, k, q, kernels, out_h * out_w, z_last) \
                        if z_last != y_last and "z" in b.types else None
                    b.store("y", (at_y,), channel_result(b, activation, k, value, at_y, at_z))
                # Through an array also channels-last: stored straight,
                # LLVM's dead store elimination took 3x as long over the
                # kernel (ResNet-18 compiled 20% slower), and ran no faster.
                store_tile(b, acc, ms, pixels, ragged, store, used, not y_last,
                           through_array=True)
            column_tiles(b, count, tile, tile_cols, one_rest=True)

    in_groups(b, k0, width_k, kernels, panel)
    return (mul(b.dim("x", 0), i64(panels * chunks)),)


def _taps_by_plane(b: KernelBuilder, tap, channels: int, rows: int, cols: int, dilation,
                   pitch: int, plane_size: int) -> None:
    """``tap(step, offset)`` for every tap of an NCHW input, channel by
    channel: ``step`` (c R + r) S + s, ``offset`` from a pixel's value."""
    dh, dw = dilation
    with b.loop("c", i64(channels)) as c:
        plane = b.let("plane", mul(c, i64(plane_size)))
        # A filter row's taps unrolled, the rows a loop: a 3x3 tile
        # unrolled whole gave LLVM's SLP vectoriser 2,304 multiply-adds in
        # one block (0.5 s per kernel, ResNet-18 5.3 s to compile on 2
        # cores, now 2.5), and ran no faster.
        with b.loop("r", i64(rows), unroll=1) as r:
            line = b.let("line", add(plane, mul(r, i64(dh * pitch))))
            with b.loop("s", i64(cols), unroll=cols) as s:
                tap(add(mul(add(mul(c, i64(rows)), r), i64(cols)), s),
                    add(line, mul(s, i64(dw))))


def _taps_channels_last(b: KernelBuilder, tap, channels: int, rows: int, cols: int,
                        dilation, pitch: int) -> None:
    """``tap(step, offset)`` for every tap of a channels-last input, the
    channels of each filter position consecutive: ``step`` (r S + s) C +
    c, ``offset`` from a pixel's value."""
    dh, dw = dilation
    with b.loop("r", i64(rows), unroll=1) as r:
        with b.loop("s", i64(cols), unroll=1) as s:
            position = b.let("position", add(mul(r, i64(cols)), s))
            line = b.let("line", mul(add(mul(r, i64(dh * pitch)), mul(s, i64(dw))),
                                     i64(channels)))
            first = b.let("step", mul(position, i64(channels)))
            with b.loop("c", i64(channels)) as c:
                tap(add(first, c), add(line, c))


def _rows_per_instance(b: KernelBuilder, sizes, stride, padding, dilation, width_k: int,
                       panels: int) -> int | None:
    """The output rows of an instance (of ``width_k`` output channels, in
    ``panels`` per image): as many as take least time over the cores
    (rounds of instances, each its multiply-adds and, with padding, its
    copy of the rows it reads), within COPY_ELEMENTS; None where one
    row's copy is too large or costs more than COPY_SHARE of its
    multiply-adds."""
    channels, _, width, _, _, rows, cols, _, out_h, out_w = sizes
    sh, dh = stride[0], dilation[0]
    in_place, pitch = not any(padding), width + padding[1] + padding[3]
    inner = channels * rows * cols
    images = const_value(b.dim("x", 0)) or 1

    def costs(chunk: int) -> tuple[float, float]:
        """(vector multiply-adds, copies) of an instance with ``chunk`` rows."""
        copied = channels * ((chunk - 1) * sh + dh * (rows - 1) + 1) * pitch
        return (chunk * out_w * width_k * inner / b.tiles.cols, 0 if in_place else 2 * copied)

    def duration(chunk: int) -> tuple[float, int]:
        rounds = -(-images * panels * -(-out_h // chunk) // b.tiles.cores)
        return rounds * sum(costs(chunk)), -chunk
    fitting = [c for c in range(1, out_h + 1) if costs(c)[1] <= 2 * COPY_ELEMENTS]
    if not fitting:
        return None
    chunk = min(fitting, key=duration)
    multiply_adds, copies = costs(chunk)
    return chunk if copies <= COPY_SHARE * multiply_adds else None


def _copy_rows(b: KernelBuilder, n: Expr, oh0: Expr, sizes, stride, padding,
               copy_rows: int, x_last: bool) -> tuple[str, int]:
    """Copy the input rows an instance reads into a private array whose
    zeros are the padding, laid out as the input is (``x_last``:
    channels-last, ``[rows][padded width][C]``; else ``[C][rows][padded
    width]``): (its name, its channel plane's size, 1 channels-last)."""
    channels, height, width = sizes[:3]
    (sh, _), (top, left, _, right) = stride, padding
    pitch = width + left + right
    copy = b.fresh("rows")
    b.emit(ArrayDecl(copy, b.element("x"), (channels * copy_rows * pitch,), "private"))
    ih0 = b.let("ih0", add(mul(oh0, i64(sh)), i64(-top)))
    if x_last:
        image = b.let("from", mul(n, i64(height * width * channels)))
        with b.loop("r", i64(copy_rows)) as r:
            ih = b.let("ih", add(ih0, r))
            with b.when(in_range(ih, i64(height))):
                to = b.let("to", mul(add(mul(r, i64(pitch)), i64(left)), i64(channels)))
                line = b.let("line", add(image, mul(ih, i64(width * channels))))
                with b.loop("v", i64(width * channels)) as v:
                    b.store(copy, (add(to, v),), b.load("x", add(line, v)))
        return copy, 1
    with b.loop("c", i64(channels)) as c:
        with b.loop("r", i64(copy_rows)) as r:
            ih = b.let("ih", add(ih0, r))
            with b.when(in_range(ih, i64(height))):
                to = b.let("to", add(mul(add(mul(c, i64(copy_rows)), r), i64(pitch)), i64(left)))
                with b.loop("iw", i64(width)) as iw:
                    b.store(copy, (add(to, iw),), b.load("x", n, c, ih, iw))
    return copy, copy_rows * pitch
