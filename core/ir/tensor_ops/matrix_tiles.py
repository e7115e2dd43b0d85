"""Register-tiled lowerings of matrix products (tiled.py describes the
tiles): a Product is y = a @ b over MatrixViews of ports, batched over
leading dims, each result through a ``finish`` (gemm's scale, bias and
activation; a convolution's bias): matmul and gemm nodes, and 1x1
convolutions, take this form.  Large products are packed
(packed_products.py); the lowerings here read the operands in place.

The instances of a product form a grid: one per matrix of the batch (the
result's leading dims, operands broadcast along them), block of ``rows``
consecutive rows, and group of columns.  Column groups are made only
where the batch and the row blocks give fewer than MIN_INSTANCES
instances (a classifier's one row, eight images), so that every core has
work; each group is whole tiles wide.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..kernel import ArrayDecl, Expr, InstanceId, Intrinsic, Load
from .activation import apply_kernel
from .lowering import KernelBuilder, add, broadcast_indices, const_value, div, flat_index, mul
from .lowering import product as size_product
from .tiled import ArrayTile, column_tiles, i64

VECTOR_K_STEPS = 8
"""Reduction steps of a vector-tiled matrix product unrolled together: the
SLP vectoriser then reads each row of ``a`` as vectors, not as a gather of
one value per row (fc 400->120 with b as [K, N]: 0.14 -> 0.09 ms)."""
DOT_ROWS, DOT_COLS, DOT_LANES = 4, 2, 8
"""Block of results per step of a dot-product gemm (b transposed), and its
partial sums per result: 8 vectors of 8 f32 in registers."""
MIN_INSTANCES = 64
"""Fewest instances a product is split into, where its shape allows:
four per core of a 16-core machine, for balance."""
MIN_GROUP_TILES = 4
"""Narrowest column group, in tiles: narrower, and re-reading a block's
rows of ``a`` for each group costs more than the cores gain."""


@dataclass(frozen=True)
class MatrixView:
    """A port read or written as a batch of matrices: ``batch`` dims (numpy
    broadcasting against the product's: aligned on the right, a size-1 dim
    reads 0), then ``rows`` x ``cols``, stored row-major, or column-major
    when ``transposed`` (gemm's trans_a / trans_b); consecutive matrices
    of the batch ``rows * cols`` apart.

    A view may read its rows as the output pixels of a strided 1x1
    convolution: ``pixels`` (out_width, input_width, stride_h, stride_w,
    input_height) puts row q at input pixel (q div out_width * stride_h,
    q mod out_width * stride_w); transposed, columns (channels) lie a
    whole input plane apart, else (channels-last) consecutive."""

    port: str
    batch: tuple[Expr, ...]
    rows: Expr
    cols: Expr
    transposed: bool = False
    pixels: tuple[int, int, int, int, int] | None = None

    def offset(self, b: KernelBuilder, batch: list[Expr]) -> Expr:
        """The flat offset of the matrix at the product's ``batch`` indices."""
        indices = broadcast_indices(list(self.batch), batch)
        return mul(flat_index(indices, list(self.batch)), mul(self._pitch(), self.cols))

    def index(self, base: Expr, row: Expr, col: Expr) -> Expr:
        if self.pixels is not None:
            out_width, width, down, across, _ = self.pixels
            row = add(mul(div(row, i64(out_width)), i64(down * width)),
                      mul(row % i64(out_width), i64(across)))
        if not self.transposed:
            return add(base, add(mul(row, self.cols), col))
        return add(base, add(mul(col, self._pitch()), row))

    def _pitch(self) -> Expr:
        """The distance between consecutive columns of a transposed view."""
        if self.pixels is None:
            return self.rows
        _, width, _, _, height = self.pixels
        return i64(width * height)


Finish = Callable[[KernelBuilder, Expr, Expr, Expr, Expr], Expr]
"""finish(b, m, n, sum, at) -> the value stored at y[m, n], the flat index
``at`` of ``y``."""


@dataclass(frozen=True)
class Product:
    """y = a @ b over the views, batched over ``batch`` (the result's
    leading dims); each sum goes through ``finish`` (scale, bias,
    activation) to the store."""

    a: MatrixView
    b: MatrixView
    y: MatrixView
    batch: tuple[Expr, ...]
    finish: Finish
    reads_results: bool = False
    """``finish`` loads values of ``y``'s shape: tiles are stored through
    an array (store_tile)."""


def port_product(b: KernelBuilder, trans_a: bool, trans_b: bool, finish: Finish) -> Product:
    """The product of a matmul or gemm node: a' @ b' over its ports."""
    def view(port: str, transposed: bool) -> MatrixView:
        dims = b.dims(port)
        rows, cols = (dims[-1], dims[-2]) if transposed else (dims[-2], dims[-1])
        return MatrixView(port, tuple(dims[:-2]), rows, cols, transposed)
    return Product(view("a", trans_a), view("b", trans_b), view("y", False),
                   tuple(b.dims("y")[:-2]), finish)


class Operands:
    """Loads of ``a`` and ``b`` and stores of ``y`` within the matrices of
    one batch index of ``product``, as flat indices."""

    def __init__(self, b: KernelBuilder, product: Product, batch: Expr | None):
        self.b, self.product = b, product
        self.base: dict[str, Expr] = {}
        indices = (b.unflatten(batch, list(product.batch),
                               [f"batch{axis}" for axis in range(len(product.batch))])
                   if product.batch else [])
        for name in ("a", "b", "y"):
            view: MatrixView = getattr(product, name)
            offset = view.offset(b, indices)
            self.base[name] = offset if const_value(offset) is not None else b.let(
                f"{name}0", offset)

    def load(self, name: str, row: Expr, col: Expr) -> Load:
        """Element (row, col) of operand ``name`` ("a" or "b")."""
        view: MatrixView = getattr(self.product, name)
        return self.b.load(view.port, view.index(self.base[name], row, col))

    def store(self, row: Expr, col: Expr, total: Expr) -> None:
        """y[row, col] = finish(total)."""
        view = self.product.y
        at = view.index(self.base["y"], row, col)
        self.b.store(view.port, at, self.product.finish(self.b, row, col, total, at))


class ProductGrid(Operands):
    """The results one instance computes: ``rows`` consecutive rows of
    one matrix of the batch, in one group of columns.  ``reads`` index
    the operand rows (rows past the end, in the last block, read the last
    row; they are not stored); ``replication`` is the number of
    instances."""

    def __init__(self, b: KernelBuilder, product: Product, max_rows: int, tile_cols: int):
        out_rows, cols = product.y.rows, const_value(product.y.cols)
        fixed_rows = const_value(out_rows)
        self.rows = max_rows if fixed_rows is None else min(max_rows, fixed_rows)
        self.ragged = fixed_rows is None or fixed_rows % self.rows != 0
        self.out_rows, self.cols = out_rows, cols
        blocks = (out_rows if self.rows == 1 else
                  i64(-(-fixed_rows // self.rows)) if fixed_rows is not None else
                  div(add(out_rows, i64(self.rows - 1)), i64(self.rows)))
        matrices = size_product(product.batch)
        self.group = _group_width(const_value(mul(matrices, blocks)), cols, tile_cols)
        groups = -(-cols // self.group)
        instance = b.let("i", InstanceId(0))
        self.column0 = (b.let("n0", mul(instance % i64(groups), i64(self.group)))
                        if groups > 1 else i64(0))
        rest = b.let("ib", div(instance, i64(groups))) if groups > 1 else instance
        block = b.let("rb", rest % blocks) if product.batch else rest
        super().__init__(b, product, b.let("bi", div(rest, blocks)) if product.batch else None)
        m0 = b.let("m0", mul(block, i64(self.rows)))
        self.ms = [add(m0, i64(i)) for i in range(self.rows)]
        self.reads = clamped_rows(b, self.ms, out_rows, self.ragged)
        self.replication = (mul(mul(matrices, blocks), i64(groups)),)

    def guard(self, row: int):
        """Skip the stores of a row past the end."""
        return self.b.guard(self.ragged, self.ms[row].lt(self.out_rows))

    def column_tiles(self, emit: Callable[[Expr, int], None], width: int) -> None:
        """``emit(start, width)`` for the tiles of this instance's columns."""
        in_groups(self.b, self.column0, self.group, self.cols,
                  lambda start, count: column_tiles(
                      self.b, count, lambda at, w: emit(add(start, at), w), width))


def clamped_rows(b: KernelBuilder, rows: list[Expr], count: Expr, ragged: bool) -> list[Expr]:
    """The rows an operand is read at: past the last row (in a ragged last
    block), the last row; those results are not stored."""
    last = add(count, i64(-1))
    return [b.let("mr", Intrinsic("min", (m, last)) if ragged else m) for m in rows]


def in_groups(b: KernelBuilder, start: Expr, group: int, count: int,
              emit: Callable[[Expr, int], None]) -> None:
    """``emit(start, columns)`` for the group of columns from ``start``:
    ``group`` of them, or in the last group what is left of ``count``
    (each case its own code, as tile widths are fixed when lowering)."""
    full = count // group * group
    if full in (0, count):
        emit(start, group if full else count)
        return
    with b.when(start.lt(i64(full))):
        emit(start, group)
    with b.when(start.ge(i64(full))):
        emit(start, count - full)


def _group_width(instances: int | None, cols: int, tile_cols: int) -> int:
    """Columns per group: all of them, unless ``instances`` (without
    groups) is fixed and under MIN_INSTANCES."""
    if instances is None or instances >= MIN_INSTANCES:
        return cols
    tiles = -(-cols // tile_cols)
    per_group = max(MIN_GROUP_TILES, -(-tiles * instances // MIN_INSTANCES))
    return min(cols, per_group * tile_cols)


def gemm_finish(alpha: float, beta: float, activation) -> Finish:
    """act(alpha * sum + beta * c[m, n]) (c broadcast, if given)."""
    def finish(b: KernelBuilder, m: Expr, n: Expr, total: Expr, at: Expr) -> Expr:
        result = total if alpha == 1.0 else b.const(alpha) * total
        if "c" in b.types:
            bias = b.load_broadcast("c", [m, n])
            result = result + (bias if beta == 1.0 else b.const(beta) * bias)
        return apply_kernel(activation, result)
    return finish


def lower_row_tiles(b: KernelBuilder, product: Product) -> tuple[Expr, ...]:
    """Register tiles of rows of ``a`` x columns of ``b``, reading the
    operands where they are."""
    grid = ProductGrid(b, product, b.tiles.rows, b.tiles.cols)

    def tile(n0: Expr, width: int) -> None:
        acc = ArrayTile(b, grid.rows, width)

        def step(k: Expr) -> None:
            lhs = [b.let("av", grid.load("a", m, k)) for m in grid.reads]
            acc.accumulate(lhs, lambda j: grid.load("b", k, add(n0, j)))
        reduction(b, product.a.cols, step, VECTOR_K_STEPS if b.tiles.vectors else 1)
        store_tile(b, acc, grid.ms, grid.out_rows, grid.ragged,
                   lambda m, j, value: grid.store(m, add(n0, j), value), width,
                   product.y.transposed, through_array=product.reads_results)

    grid.column_tiles(tile, b.tiles.cols)
    return grid.replication


def store_tile(b: KernelBuilder, acc: ArrayTile, ms: list[Expr], out_rows: Expr,
               ragged: bool, store, used: int, transposed: bool = False,
               through_array: bool = False) -> None:
    """Store the first ``used`` columns of tile ``acc`` (rows ``ms``, those
    from ``out_rows`` on skipped where ``ragged``) through ``store(m, j,
    value)``: straight from the tile, or through a private array holding
    it where ``y`` is ``transposed`` (then a loop over its columns stores
    each column's rows, consecutive values of ``y``) or where asked
    (``through_array``; then a loop over each row's columns): where the
    epilogue reads values of ``y``'s shape (a residual summand), say.
    Stored straight from the tile, LLVM's SLP vectoriser took those
    consecutive stores, or loads, for the vectors and rebuilt the whole
    tile's arithmetic around them in narrower vectors (a 1x1 convolution
    computed transposed ran at half the speed; a 3x3 one stored
    channels-last with a summand, 128 channels at 28x28, too)."""
    if not (transposed or through_array):
        for r, m in enumerate(ms):
            with b.guard(ragged, m.lt(out_rows)):
                acc.store(r, lambda j, value, m=m: store(m, j, value), stop=used)
        return
    copy = b.fresh("tile")
    b.emit(ArrayDecl(copy, acc.element, (acc.rows, acc.cols), "private", zeroed=False))
    for r in range(acc.rows):
        acc.store(r, lambda j, value, r=r: b.store(copy, (i64(r), j), value), stop=used)
    if transposed:
        with b.loop("j", i64(used), unroll=1) as j:
            for r, m in enumerate(ms):
                with b.guard(ragged, m.lt(out_rows)):
                    store(m, j, Load(copy, (i64(r), j), acc.element))
        return
    for r, m in enumerate(ms):
        with b.guard(ragged, m.lt(out_rows)):
            with b.loop("j", i64(used), unroll=1) as j:
                store(m, j, Load(copy, (i64(r), j), acc.element))


def reduction(b: KernelBuilder, count: Expr, step: Callable[[Expr], None],
              unrolled: int) -> None:
    """``step(k)`` for k in [0, count): in blocks of ``unrolled`` steps, each
    block unrolled, then the remainder."""
    fixed = const_value(count)
    blocks = div(count, i64(unrolled)) if fixed is None else i64(fixed // unrolled)
    if unrolled > 1 and const_value(blocks) != 0:
        with b.loop("kb", blocks) as kb:
            with b.loop("kk", i64(unrolled), unroll=unrolled) as kk:
                step(add(mul(kb, i64(unrolled)), kk))
        start = mul(blocks, i64(unrolled))
    else:
        start = i64(0)
    if fixed is None or fixed != const_value(start):
        with b.loop("k", count, start=start) as k:
            step(k)


def lower_dot_products(b: KernelBuilder, product: Product) -> tuple[Expr, ...]:
    """y = a @ b' with b' stored transposed (b [N, K]): rows of both
    operands are contiguous in k, so each result is a dot product, summed
    as DOT_LANES partial sums (element p sums the k = p mod DOT_LANES)
    added at the end.  Per step of DOT_LANES k, an inner loop over p loads
    DOT_LANES consecutive values of each operand row and updates the
    partial sums of a block of DOT_ROWS x DOT_COLS results."""
    inner = product.a.cols
    grid = ProductGrid(b, product, DOT_ROWS, DOT_COLS)
    lanes = i64(DOT_LANES)
    fixed_inner = const_value(inner)
    steps = div(inner, lanes) if fixed_inner is None else i64(fixed_inner // DOT_LANES)

    def tile(n0: Expr, width: int) -> None:
        name = b.fresh("acc")
        element = b.element("y")
        b.emit(ArrayDecl(name, element, (grid.rows, width, DOT_LANES), "private"))

        def update(k: Expr, lane: Expr) -> None:
            lhs = [b.let("av", grid.load("a", m, k)) for m in grid.reads]
            rhs = [b.let("bv", grid.load("b", k, add(n0, i64(c)))) for c in range(width)]
            for row, av in enumerate(lhs):
                for col, bv in enumerate(rhs):
                    cell = (i64(row), i64(col), lane)
                    b.store(name, cell, Load(name, cell, element) + av * bv)

        # Unrolling this loop fully would stop LLVM vectorising the one in it.
        with b.loop("ks", steps, unroll=1) as ks:
            k0 = b.let("k0", mul(ks, lanes))
            with b.loop("p", lanes, unroll=1, ivdep=True) as p:
                update(add(k0, p), p)
        if fixed_inner is None or fixed_inner % DOT_LANES:
            with b.loop("k", inner, start=mul(steps, lanes)) as k:
                update(k, i64(0))
        for row, m in enumerate(grid.ms):
            with grid.guard(row):
                for col in range(width):
                    total = b.let("sum", b.const(0))
                    with b.loop("p", lanes) as p:
                        b.assign(total, total + Load(name, (i64(row), i64(col), p), element))
                    grid.store(m, add(n0, i64(col)), total)

    grid.column_tiles(tile, DOT_COLS)
    return grid.replication
