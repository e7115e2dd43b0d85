"""Convolutions of small images as matrix products over flattened pixels,
for targets with vector units (``RegisterTiles.vectors``).

The row-tiled lowering (tiled.py) vectorises along an output row: a row
of 7 or 14 pixels leaves most lanes of a 16-lane vector idle, and an
image of 7 rows gives 7 instances.  Deep layers of image models have
exactly those shapes (512 channels at 7x7 in ResNets).  Here an instance
computes a group of output channels of one image at every pixel, and the
pixels are flattened over the rows, so that tiles run across row ends.
Register tiles of ``rows`` output channels x ``cols`` pixels walk the
taps (channel, kernel row, kernel column); each step loads one weight per
row and a contiguous vector of pixels from a *panel*, which is one of:

- **the input itself**, for stride 1 without padding: tap (c, r, s) of
  flat pixel q reads x at the flat offset c*H*W + r*dh*W + s*dw + q, where
  q = oh*W + ow walks the output at the input's row pitch (the W - OW
  columns past each row's end are computed and dropped);
- **im2col** otherwise: per block of channels, the values each tap reads
  copied into a private ``[block * R * S, OH * OW]`` array (zero where a
  tap reads the padding).  A copy of the padded image read at its row
  pitch, as above, copies less but runs more tiles past the row ends:
  it measured 10-15% slower at 7x7 (sixty-one pixels a channel against
  forty-nine), and no faster at 14x14.

With more than one block of channels the tiles add into a private
``[group, pixels]`` array of sums kept across blocks; the sums, bias and
activation are stored at the end.  Groups of 1; no perforation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..kernel import ArrayDecl, Expr, InstanceId, Load
from .activation import Activation, channel_result
from .lowering import KernelBuilder, add, div, in_range, maximum, minimum, mul
from .perforation import approximated
from .tiled import ArrayTile, fixed_sizes, i64, pixel_tiles

PANEL_ELEMENTS = 8192
"""Largest private panel or sums array (elements; 32 KiB of f32: a tile
pass's panel rows and weights stay in a core's L1; 32768 measured 5-10%
slower at 7x7 and 14x14)."""
MIN_PANEL_ROWS = 16
"""Fewest taps a block must give the tiles: fewer, and the sums' loads
and stores outweigh the multiply-adds between them."""
INSTANCES_PER_IMAGE = 8
"""The channel group shrinks (down to one register tile) until an image
gives at least this many instances, for the cores at batch 1."""


@dataclass(frozen=True)
class Plan:
    """How a node is lowered: ``group`` output channels per instance in
    tiles of ``tile_rows``; input channels in blocks of ``block``; the
    panel's ``kind`` (direct, im2col), its row ``pitch`` in pixels and
    the ``pixels`` the tiles cover; ``sizes``: x's C, H, W, w's four
    sizes and y's K, OH, OW."""

    sizes: tuple[int, ...]
    group: int
    tile_rows: int
    block: int
    kind: str
    pitch: int
    pixels: int


def plan(b: KernelBuilder, stride, padding, dilation) -> Plan | None:
    """The plan for this node, or None where the lowering does not suit:
    symbolic sizes, a target without vectors, rows wide enough for the
    row tiles, approximations, or blocks of too few taps."""
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("w") + b.dims("y")[1:])
    if sizes is None or not b.tiles.vectors or approximated(b.ctx):
        return None
    channels, height, width, kernels, _, rows, cols, _, out_h, out_w = sizes
    if out_w >= b.tiles.cols:
        return None
    taps = rows * cols
    if stride != (1, 1) or any(padding):
        kind, pitch, pixels, per_channel = "im2col", out_w, out_h * out_w, taps * out_h * out_w
    else:
        kind, pitch, pixels, per_channel = "direct", width, (out_h - 1) * width + out_w, 0
    tile_rows = max(r for r in range(1, b.tiles.rows + 1) if kernels % r == 0)
    group = tile_rows
    for tiles in (4, 2):
        if kernels % (tile_rows * tiles) == 0 and kernels // (tile_rows * tiles) >= \
                INSTANCES_PER_IMAGE:
            group = tile_rows * tiles
            break
    blocks = [c for c in range(channels, 0, -1)
              if channels % c == 0 and c * per_channel <= PANEL_ELEMENTS]
    if not blocks or blocks[0] * taps < min(MIN_PANEL_ROWS, channels * taps):
        return None
    if blocks[0] < channels and group * pixels > PANEL_ELEMENTS:
        return None
    return Plan(tuple(sizes), group, tile_rows, blocks[0], kind, pitch, pixels)


def lower_conv2d_panels(b: KernelBuilder, stride, padding, dilation,
                        activation: Activation) -> tuple[Expr, ...] | None:
    """One instance per image and channel group (see the module's text);
    None when ``plan`` declines."""
    p = plan(b, stride, padding, dilation)
    if p is None:
        return None
    sizes = p.sizes
    channels, _, _, kernels, _, rows, cols, _, out_h, out_w = sizes
    groups_per_image = kernels // p.group
    instance = b.let("i", InstanceId(0))
    n = b.let("n", div(instance, i64(groups_per_image)))
    k0 = b.let("k0", mul(instance % i64(groups_per_image), i64(p.group)))
    blocks = channels // p.block
    sums = None
    if blocks > 1:
        sums = b.fresh("sums")
        b.emit(ArrayDecl(sums, b.element("y"), (p.group, p.pixels), "private"))
    make_panel = _direct if p.kind == "direct" else _im2col
    read = make_panel(b, p, n, sizes, stride, padding, dilation)
    with b.loop("cb", i64(blocks)) as cb:
        c0 = b.let("c0", mul(cb, i64(p.block)))
        tap_value = read(c0)
        with b.loop("kg", i64(p.group // p.tile_rows)) as kg:
            first = b.let("kr", mul(kg, i64(p.tile_rows)))

            def tile(p0: Expr, width: int, done: int = 0) -> None:
                acc = ArrayTile(b, p.tile_rows, width)
                with b.loop("c", i64(p.block)) as c:
                    with b.loop("r", i64(rows)) as r:
                        with b.loop("s", i64(cols)) as s:
                            value = tap_value(c, r, s, p0)
                            weights = [b.let("wk", b.load("w", add(k0, add(first, i64(i))),
                                                          add(c0, c), r, s))
                                       for i in range(p.tile_rows)]
                            acc.accumulate(weights, value)
                for i in range(p.tile_rows):
                    k = add(first, i64(i))
                    if sums is None:
                        acc.store(i, lambda j, v, k=k: _store_result(
                            b, p, n, add(k0, k), add(p0, j), v, activation, out_w), done)
                    else:
                        def add_in(j, v, k=k):
                            cell = (k, add(p0, j))
                            b.store(sums, cell, Load(sums, cell, b.element("y")) + v)
                        acc.store(i, add_in, done)

            pixel_tiles(b, p.pixels, tile)
    if sums is not None:
        with b.loop("k", i64(p.group)) as k:
            with b.loop("q", i64(p.pixels)) as q:
                _store_result(b, p, n, add(k0, k), q, Load(sums, (k, q), b.element("y")),
                              activation, out_w)
    return (mul(b.dim("x", 0), i64(groups_per_image)),)


def _store_result(b: KernelBuilder, p: Plan, n: Expr, k: Expr, q: Expr, value: Expr,
                  activation: Activation, out_w: int) -> None:
    """y[n, k, q / pitch, q % pitch] = act(value + bias + z) where the
    column is an output column (not past a row's end)."""
    oh, ow = div(q, i64(p.pitch)), q % i64(p.pitch)
    with b.guard(p.pitch != out_w, ow.lt(i64(out_w))):
        at = (n, k, oh, ow)
        b.store("y", at, channel_result(b, activation, k, value, at))


Reader = Callable[[Expr], Callable[[Expr, Expr, Expr, Expr], Callable[[Expr], Expr]]]
"""read(c0) -> tap_value(c, r, s, p0) -> column(j): the panel value of
tap (c0 + c, r, s) at flat pixel p0 + j; ``read`` runs once per block
(where copies are made)."""


def _direct(b: KernelBuilder, p: Plan, n: Expr, sizes, stride, padding, dilation) -> Reader:
    channels, height, width, *_ = sizes
    (dh, dw) = dilation
    element = b.element("x")

    def read(c0: Expr):
        image = b.let("image", mul(add(mul(n, i64(channels)), c0), i64(height * width)))

        def tap_value(c, r, s, p0):
            start = b.let("at", add(add(image, mul(c, i64(height * width))), add(
                add(mul(r, i64(dh * width)), mul(s, i64(dw))), p0)))
            return lambda j: Load("x", (add(start, j),), element)
        return tap_value
    return read


def _im2col(b: KernelBuilder, p: Plan, n: Expr, sizes, stride, padding, dilation) -> Reader:
    _, height, width, _, _, rows, cols, _, out_h, out_w = sizes
    (sh, sw), (top, left, bottom, _), (dh, dw) = stride, padding, dilation
    element = b.element("x")
    panel = b.fresh("panel")
    b.emit(ArrayDecl(panel, element, (p.block * rows * cols, p.pixels), "private"))

    def tap_row(c, r, s):
        return add(mul(add(mul(c, i64(rows)), r), i64(cols)), s)

    def read(c0: Expr):
        with b.loop("c", i64(p.block)) as c:
            with b.loop("r", i64(rows)) as r:
                with b.loop("s", i64(cols)) as s:
                    row = b.let("tap", tap_row(c, r, s))
                    # the output columns whose input column ow * sw - shift
                    # lies inside the image; the others keep their zeros
                    # (the same for every block)
                    shift = b.let("shift", add(i64(left), mul(s, i64(-dw))))
                    first = b.let("ow0", div(add(maximum(shift, i64(0)), i64(sw - 1)),
                                             i64(sw)))
                    last = b.let("ow1", minimum(i64(out_w), div(add(maximum(
                        add(shift, i64(width - 1)), i64(-1)), i64(sw)), i64(sw))))
                    with b.loop("oh", i64(out_h)) as oh:
                        ih = b.let("ih", add(add(mul(oh, i64(sh)), i64(-top)),
                                             mul(r, i64(dh))))
                        with b.guard(top + bottom > 0, in_range(ih, i64(height))):
                            with b.loop("ow", last, start=first) as ow:
                                iw = add(mul(ow, i64(sw)), mul(shift, i64(-1)))
                                b.store(panel, (row, add(mul(oh, i64(out_w)), ow)),
                                        b.load("x", n, add(c0, c), ih, iw))

        def tap_value(c, r, s, p0):
            row = b.let("tap", tap_row(c, r, s))
            return lambda j: Load(panel, (row, add(p0, j)), element)
        return tap_value
    return read
