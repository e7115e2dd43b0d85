"""Register-tiled lowering of conv2d, and the tiles matrix products
(matrix_tiles.py) and the other convolution lowerings share.

Each instance computes tiles of results: a tile is a small private array
``acc[rows][cols]`` that one walk over the reduction fills.  Per reduction
step the kernel loads ``rows`` scalars (weights, or elements of ``a``) and
then, in an inner loop over the tile's columns, one consecutive value per
column (input pixels, or elements of a row of ``b``) and does ``rows``
multiply-adds per column.  That inner loop has no loop-carried value and
contiguous loads, so a vectorising back end (LLVM's loop vectoriser) turns
it into vector loads and multiply-adds on registers; the reference
lowerings (one instance per output element, a scalar reduction loop) leave
nothing to vectorise, as floating-point sums may not be reordered.

Tile shapes come from the target (``b.tiles``, lowering.RegisterTiles).
Widths are fixed when lowering: full tiles of ``cols`` and tail tiles of
the remainder, so no tile needs bounds checks on its columns.
When a shape this needs is symbolic (beyond the batch), the functions here
return None and the caller uses the reference lowering.
"""
from __future__ import annotations

from typing import Callable

from ..kernel import ArrayDecl, Const, Expr, InstanceId, Load, Var
from ..types import I64
from .activation import apply_kernel, with_summand
from .lowering import KernelBuilder, add, const_value, div, in_range, mul
from .perforation import real_position, sampled_sum, sampled_tap, skip_pattern

MAX_PADDED_ROWS = 32768
"""Largest private copy of padded input rows (elements) a conv instance makes."""


def i64(value: int) -> Const:
    """An index constant."""
    return Const(value, I64)


def fixed_sizes(dims: list[Expr]) -> list[int] | None:
    values = [const_value(d) for d in dims]
    return None if any(v is None for v in values) else values


class ArrayTile:
    """A ``rows`` x ``cols`` private accumulator array, zeroed where it is
    declared (the current point of the kernel)."""

    def __init__(self, b: KernelBuilder, rows: int, cols: int):
        self.b, self.rows, self.cols = b, rows, cols
        self.unroll = cols if b.tiles.vectors else None
        self.element = b.element("y")
        self.name = b.fresh("acc")
        b.emit(ArrayDecl(self.name, self.element, (rows, cols), "private"))

    def cell(self, row: int, col: Expr) -> Load:
        return Load(self.name, (i64(row), col), self.element)

    def accumulate(self, row_values: list[Expr], column: Callable[[Var], Expr]) -> None:
        """acc[i][j] += row_values[i] * column(j) for every cell."""
        with self.b.loop("j", i64(self.cols), unroll=self.unroll) as j:
            value = self.b.let("v", column(j))
            for row, factor in enumerate(row_values):
                self.b.store(self.name, (i64(row), j), self.cell(row, j) + factor * value)

    def store(self, row: int, emit: Callable[[Var, Expr], None], first: int = 0,
              stop: int | None = None) -> None:
        """Call ``emit(j, acc[row][j])`` inside a loop over the columns
        from ``first`` to ``stop`` (the last by default), unrolled like the
        accumulation (a loop left rolled indexes the tile with a variable
        and keeps it out of registers: a 1x1 convolution with a ReLU ran
        8x slower)."""
        stop = self.cols if stop is None else stop
        with self.b.loop("j", i64(stop), start=i64(first), unroll=self.unroll) as j:
            emit(j, self.cell(row, j))


def column_tiles(b: KernelBuilder, count: int, emit: Callable[[Expr, int], None],
                 width: int | None = None, one_rest: bool = False) -> None:
    """Call ``emit(start, width)`` for the full tiles covering ``count``
    columns (in a loop), then for the remainder: one tile, or for vector
    tiles one per power of two it holds (13: 8, 4, 1) unless ``one_rest``
    (a caller that pads the last tile to whole vectors)."""
    width = width or b.tiles.cols
    full, rest = divmod(count, width)
    if full == 1:
        emit(i64(0), width)
    elif full > 1:
        with b.loop("t", i64(full)) as t:
            emit(b.let("col", mul(t, i64(width))), width)
    start = full * width
    while rest:
        piece = 1 << (rest.bit_length() - 1) if b.tiles.vectors and not one_rest else rest
        emit(i64(start), piece)
        start, rest = start + piece, rest - piece


def pixel_tiles(b: KernelBuilder, count: int, emit: Callable[..., None],
                width: int | None = None) -> None:
    """``emit(start, width, done)`` for tiles covering ``count`` flattened
    pixels: full tiles, then one full tile ending at the last pixel whose
    first ``done`` columns (stored already) are not stored again: a
    49-pixel image takes four passes of 16 where power-of-two pieces (16,
    16, 16, 1) would take as many, and 61 pixels four instead of six (16,
    16, 16, 8, 4, 1).  Fewer pixels than a tile: ``column_tiles``."""
    width = width or b.tiles.cols
    if count <= width:
        column_tiles(b, count, emit, width)
        return
    full, rest = divmod(count, width)
    column_tiles(b, full * width, emit, width)
    if rest:
        emit(i64(count - width), width, width - rest)


# conv2d -------------------------------------------------------------------
def lower_conv2d(b: KernelBuilder, stride, padding, dilation, groups,
                 activation: str) -> tuple[Expr, ...] | None:
    """One instance per output row (n, oh), all channels; None when the
    shapes (other than the batch) are not fixed, groups > 1 or columns are
    perforated.  Perforated rows: instance rows are compact rows."""
    (sh, sw), (top, left, bottom, right), (dh, dw) = stride, padding, dilation
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("w") + b.dims("y")[1:])
    if groups != 1 or sizes is None or skip_pattern(b.ctx, "perforate_cols") is not None:
        return None
    row_pattern = skip_pattern(b.ctx, "perforate_rows")
    sampling = skip_pattern(b.ctx, "sample_filter")
    channels, height, width, kernels, _, rows, cols, _, out_h, out_w = sizes
    padded_width = (out_w - 1) * sw + (cols - 1) * dw + 1
    strided = sw > 1 and channels * rows * cols * out_w <= MAX_PADDED_ROWS
    # The rows are copied where padding needs zeros, and for 1x1 layers:
    # their tiles step from one channel's plane to the next (H*W apart);
    # a contiguous copy took 256->128 channels at 56x56 from 56 to 78
    # GFLOP/s on one core.
    copy_rows = (left + right > 0 or rows * cols == 1) and not strided
    if copy_rows and channels * rows * padded_width > MAX_PADDED_ROWS:
        return None
    block = max(r for r in range(1, b.tiles.rows + 1) if kernels % r == 0)
    instance = b.let("i", InstanceId(0))
    n = b.let("n", div(instance, i64(out_h)))
    oh = b.let("oh", instance % i64(out_h)) if out_h > 1 else i64(0)
    real_oh = oh if row_pattern is None else b.let("real_oh", real_position(oh, *row_pattern))
    ih0 = b.let("ih0", add(mul(real_oh, i64(sh)), i64(-top)))
    if strided:
        tap = _copy_strided_taps(b, n, ih0, (channels, rows, cols, out_w), (sw, dh, dw), left,
                                 width, height)
    elif copy_rows:
        source = _copy_padded_rows(b, n, ih0, (channels, rows, padded_width), dh, left,
                                   width, height)
    else:
        def source(c, r, col):
            return b.load("x", n, c, add(ih0, mul(r, i64(dh))), col)
    if not strided:
        def tap(c, r, s, ow0, j):
            col0 = b.let("col0", add(mul(ow0, i64(sw)), mul(s, i64(dw))))
            return source(c, r, add(col0, mul(j, i64(sw))))
    # Rows in the padding are skipped (the copies hold zeros for them).
    row_guard = top + bottom > 0 and not (copy_rows or strided)
    with b.loop("kb", i64(kernels // block)) as kb:
        k0 = b.let("k0", mul(kb, i64(block)))
        ks = [add(k0, i64(kk)) for kk in range(block)]

        def tile(ow0: Expr, width: int) -> None:
            acc = ArrayTile(b, block, width)
            with b.loop("c", i64(channels)) as c:
                with b.loop("r", i64(rows)) as r:
                    ih = add(ih0, mul(r, i64(dh)))
                    with b.guard(row_guard, in_range(ih, i64(height))):
                        with b.loop("s", i64(cols)) as s, \
                                sampled_tap(b, sampling, (c, r, s), (i64(rows), i64(cols))):
                            weights = [b.let("wk", b.load("w", k, c, r, s)) for k in ks]
                            acc.accumulate(weights, lambda j: tap(c, r, s, ow0, j))
            for row, k in enumerate(ks):
                bias = b.let("bias", b.load("b", k)) if "b" in b.types else None

                def emit(j, value, k=k, bias=bias):
                    result = sampled_sum(b, value, bias, sampling)
                    at = (n, k, oh, add(ow0, j))
                    b.store("y", at, apply_kernel(activation, with_summand(b, result, at)))
                acc.store(row, emit)

        column_tiles(b, out_w, tile)
    return (mul(b.dim("x", 0), i64(out_h)),)


def _copy_strided_taps(b, n, ih0, shape, steps, left, width, height):
    """For a strided convolution: copy, per channel, kernel row and kernel
    column, the input values the output row's columns read into a private
    array ``[channels, rows, cols, out_w]`` (zero in the padding), so that
    the tiles read consecutive values instead of every sw-th one; returns
    ``tap(c, r, s, ow0, j)`` reading it."""
    _, _, cols, out_w = shape
    sw, dh, dw = steps

    def fill(name, c, r, ih):
        with b.loop("s", i64(cols)) as s:
            with b.loop("j", i64(out_w)) as j:
                iw = b.let("iw", add(add(mul(j, i64(sw)), mul(s, i64(dw))), i64(-left)))
                with b.when(in_range(iw, i64(width))):
                    b.store(name, (c, r, s, j), b.load("x", n, c, ih, iw))

    name, element = _input_rows_copy(b, "taps", shape, ih0, dh, height, fill)

    def tap(c, r, s, ow0, j):
        return Load(name, (c, r, s, add(ow0, j)), element)
    return tap


def _copy_padded_rows(b, n, ih0, shape, dh, left, width, height):
    """Copy the input rows one output row reads into a private array
    ``[channels, rows, padded_width]``, zero at the sides and for rows in the
    padding; returns ``source(c, r, col)`` reading it."""
    padded_width = shape[2]

    def fill(name, c, r, ih):
        last = min(padded_width, width + left)
        with b.loop("j", i64(last), start=i64(left)) as j:
            b.store(name, (c, r, j), b.load("x", n, c, ih, add(j, i64(-left))))

    name, element = _input_rows_copy(b, "rows", shape, ih0, dh, height, fill)

    def source(c, r, col):
        return Load(name, (c, r, col), element)
    return source


def _input_rows_copy(b, hint: str, shape, ih0, dh, height, fill) -> tuple[str, object]:
    """Declare a zeroed private array of ``shape`` (channels and kernel rows
    first) and call ``fill(name, c, r, ih)`` for every channel and kernel
    row whose input row ``ih`` lies inside the image; (name, element)."""
    name = b.fresh(hint)
    element = b.element("x")
    b.emit(ArrayDecl(name, element, shape, "private"))
    with b.loop("c", i64(shape[0])) as c:
        with b.loop("r", i64(shape[1])) as r:
            ih = b.let("ih", add(ih0, mul(r, i64(dh))))
            with b.when(in_range(ih, i64(height))):
                fill(name, c, r, ih)
    return name, element
