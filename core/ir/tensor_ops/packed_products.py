"""Large matrix products as GEMM libraries compute them, on targets with
vector units (``RegisterTiles.vectors``).

An instance takes a *panel* of columns of the result and copies that
panel of ``b`` into a private array, tile by tile (``[tile][k][column]``),
so that each step of a register tile reads one contiguous run of
``PACKED_VECTORS`` vectors whatever the layout of ``b`` (transposed, or
rows N apart: with N = 3072 every step of the unpacked tiles touched a new
cache line).  A last tile narrower than that is padded with zeros, so
that it is whole vectors too: 49 columns are two tiles of 32, not 32, 16
and 1.  It then runs every row block of its chunk of rows against
the panel, which stays in the core's L2 (PANEL_ELEMENTS); a value of
``b`` is read from memory once per chunk instead of once per row block.
Register tiles (``packed_tile``) are PACKED_ROWS rows x PACKED_VECTORS
vectors where the target has 32 vector registers: per step one broadcast
per row and PACKED_VECTORS loads feed rows x PACKED_VECTORS
multiply-adds.

Instances: batch x panels x chunks of rows, chunks only where the cores
finish sooner for them (each chunk packs its panel anew: PACK_COST_ROWS).

Where ``b`` is a constant (weights) the caller allows to be relaid
(KernelBuilder.relayout), it is packed once, when compiling, into the
same runs for every panel (``column_panels``): instances read their panel
in place and pack nothing, so chunks cost nothing extra either.
Measured on one core of the 2-core Xeon, 128x768 @ 768x3072: 37 GFLOP/s
with the unpacked tiles, 105 packed (numpy's OpenBLAS: 118).
"""
from __future__ import annotations

import numpy as np

from ..kernel import ArrayDecl, Expr, InstanceId, Intrinsic, Load
from .lowering import KernelBuilder, add, const_value, div, mul, product as size_product
from .matrix_tiles import (
    Operands, Product, clamped_rows, in_groups, reduction, store_tile,
)
from .tiled import ArrayTile, column_tiles, i64

PANEL_ELEMENTS = 65536
"""Largest packed panel of ``b`` (elements; 256 KiB of f32, in a core's
L2 beside the rows of ``a`` streaming past it)."""
MAX_PANEL_TILES = 8
"""Widest packed panel, in tiles."""
PACKED_ROWS = 8
PACKED_VECTORS = 2
"""With 32 vector registers, tiles of PACKED_ROWS rows of PACKED_VECTORS
vectors: sixteen accumulators on AVX-512 (one vector per row, the
target's tile, measured 20% slower); with 16, the target's tile."""
PACKED_K_STEPS = 4
"""Reduction steps unrolled together (1 to 4 measured within 5%)."""
PACK_COST_ROWS = 48
"""Packing a panel costs about as much as computing this many of its
rows (a strided load and a store per value, against a sixteenth of a
multiply-add per row): rows are cut into chunks, each packing its panel
anew, only where the rounds of instances over ``b.tiles.cores`` saved
outweigh that (on 16 cores, 128x768 @ 768x768 in four chunks of 32
rows took 0.81 ms, in one 0.2; on one core, 128x3072 @ 3072x768 in two
chunks ran 40% slower)."""
MIN_PACKED_ROWS = 16
"""Fewest rows for which packing ``b`` pays: each packed value is then
used at least this many times."""
MIN_PACKED_ELEMENTS = 16384
"""Smallest ``b`` (elements) worth packing: smaller stays in L1 as it is."""


def lower_packed_product(b: KernelBuilder, product: Product) -> tuple[Expr, ...] | None:
    """The lowering of ``product`` described in the module's text; None
    where the shapes do not suit (symbolic K or N, few rows, small b)."""
    inner, cols = const_value(product.a.cols), const_value(product.y.cols)
    out_rows = product.y.rows
    fixed_rows = const_value(out_rows)
    tile_rows, tile_cols = packed_tile(b.tiles)
    if not b.tiles.vectors or inner is None or cols is None or cols < tile_cols or \
            inner * cols < MIN_PACKED_ELEMENTS or (
                fixed_rows is not None and fixed_rows < MIN_PACKED_ROWS):
        return None
    width = panel_width(inner, cols, tile_cols)
    panels = -(-cols // width)
    matrices = size_product(product.batch)
    prepacked = _prepack(b, product, tile_cols)
    chunk_blocks = _chunk_blocks(fixed_rows, const_value(matrices), panels, tile_rows,
                                 b.tiles.cores, 0 if prepacked else PACK_COST_ROWS)
    blocks = div(add(out_rows, i64(tile_rows - 1)), i64(tile_rows))
    chunks = i64(1) if chunk_blocks is None else div(add(blocks, i64(chunk_blocks - 1)),
                                                     i64(chunk_blocks))
    instance = b.let("i", InstanceId(0))
    n0 = b.let("n0", mul(instance % i64(panels), i64(width))) if panels > 1 else i64(0)
    rest = b.let("ib", div(instance, i64(panels))) if panels > 1 else instance
    chunk = b.let("chunk", rest % chunks) if chunk_blocks is not None else i64(0)
    operands = Operands(b, product, b.let("bi", div(rest, chunks)) if product.batch else None)
    first_block = mul(chunk, i64(chunk_blocks)) if chunk_blocks is not None else i64(0)
    last_block = blocks if chunk_blocks is None else Intrinsic(
        "min", (blocks, add(first_block, i64(chunk_blocks))))
    ragged = fixed_rows is None or fixed_rows % tile_rows != 0

    def panel(start: Expr, count: int) -> None:
        element = b.element(product.b.port)
        if prepacked:
            # the panel's runs are where column_panels put them
            name, first_run = product.b.port, start
        else:
            name, first_run = b.fresh("panel"), i64(0)
            tiles = -(-count // tile_cols)
            b.emit(ArrayDecl(name, element, (inner * tiles * tile_cols,), "private"))

            def pack(at: Expr, used: int) -> None:
                base = b.let("to", mul(at, i64(inner)))
                with b.loop("k", i64(inner)) as k:
                    row = b.let("row", add(base, mul(k, i64(tile_cols))))
                    with b.loop("j", i64(used)) as j:
                        b.store(name, (add(row, j),),
                                operands.load("b", k, add(add(start, at), j)))
            column_tiles(b, count, pack, tile_cols, one_rest=True)
        with b.loop("rb", last_block, start=first_block) as block:
            m0 = b.let("m0", mul(block, i64(tile_rows)))
            ms = [add(m0, i64(r)) for r in range(tile_rows)]
            reads = clamped_rows(b, ms, out_rows, ragged)

            def tile(at: Expr, used: int) -> None:
                acc = ArrayTile(b, tile_rows, tile_cols)
                base = b.let("from", mul(add(first_run, at), i64(inner)))

                def step(k: Expr) -> None:
                    lhs = [b.let("av", operands.load("a", m, k)) for m in reads]
                    row = b.let("row", add(base, mul(k, i64(tile_cols))))
                    acc.accumulate(lhs, lambda j: Load(name, (add(row, j),), element))
                reduction(b, i64(inner), step, PACKED_K_STEPS)

                def store(m: Expr, j: Expr, value: Expr) -> None:
                    operands.store(m, add(add(start, at), j), value)
                store_tile(b, acc, ms, out_rows, ragged, store, used, product.y.transposed,
                           through_array=product.reads_results)
            column_tiles(b, count, tile, tile_cols, one_rest=True)

    in_groups(b, n0, width, cols, panel)
    return (mul(mul(matrices, chunks), i64(panels)),)


def panel_width(inner: int, cols: int, tile_cols: int) -> int:
    """Columns of a panel of ``b`` (``inner`` rows, ``cols`` columns):
    whole tiles, as many as PANEL_ELEMENTS holds (at least one, at most
    MAX_PANEL_TILES), evened out over the panels (a part of a tile is
    computed in full), not full ones and a sliver."""
    widest = max(tile_cols, min(MAX_PANEL_TILES * tile_cols,
                                PANEL_ELEMENTS // inner // tile_cols * tile_cols))
    return -(-cols // -(-cols // widest) // tile_cols) * tile_cols


def packed_tile(tiles) -> tuple[int, int]:
    """(rows, columns) of a packed product's register tile."""
    if tiles.registers >= 32:
        return PACKED_ROWS, PACKED_VECTORS * tiles.cols
    return tiles.rows, tiles.cols


def _prepack(b: KernelBuilder, product: Product, tile_cols: int) -> bool:
    """Whether ``b`` is read from runs packed when compiling: it is an
    unbatched constant the caller lets this lowering relay (made so here)."""
    view = product.b
    weights = b.constant(view.port)
    sizes = [const_value(d) for d in (view.rows, view.cols)]
    if weights is None or view.batch or None in sizes:
        return False
    rows, cols = sizes
    matrix = weights.reshape((cols, rows)).T if view.transposed else weights.reshape((rows, cols))
    b.relayout(view.port, column_panels(matrix, tile_cols))
    return True


def column_panels(matrix: np.ndarray, width: int) -> np.ndarray:
    """``matrix`` [K, N] as runs of ``width`` columns, ``[N / width][K][width]``,
    the columns past N zero: the layout packed panels read (element
    (k, n) at ``n * K + k * width + n % width`` for n a run's first column
    plus up to ``width``)."""
    inner, cols = matrix.shape
    runs = -(-cols // width)
    padded = np.zeros((inner, runs * width), dtype=matrix.dtype)
    padded[:, :cols] = matrix
    return padded.reshape(inner, runs, width).transpose(1, 0, 2).copy()


def _chunk_blocks(rows: int | None, matrices: int | None, panels: int, tile_rows: int,
                  cores: int, pack_cost: int) -> int | None:
    """Row blocks per chunk, or None for one chunk of all rows: the
    chunking whose rounds of instances over ``cores``, each as long as
    its chunk's rows plus ``pack_cost`` (rows), take least time (chunks of
    at least MIN_PACKED_ROWS rows)."""
    if rows is None or matrices is None:
        return None
    blocks = -(-rows // tile_rows)

    def cost(chunk_blocks: int) -> tuple[int, int]:
        chunks = -(-blocks // chunk_blocks)
        rounds = -(-matrices * panels * chunks // cores)
        return rounds * (chunk_blocks * tile_rows + pack_cost), -chunk_blocks
    least = max(1, MIN_PACKED_ROWS // tile_rows)
    best = min(range(least, blocks + 1), key=cost)
    return None if best == blocks else best
