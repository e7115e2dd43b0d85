"""``attention``: y = rows(a @ b) @ c as one op, a ``rowwise`` program
(rowwise.py) between two matrix products, so that the scores ``a @ b``
are never stored whole: a softmax attention's [..., M, N] scores per head
(at a sequence of 4096, 64 MiB a head) become a block of rows in private
memory.  Made by the pass ``fuse-attention`` from a matmul, a rowwise op
and a matmul (scaled dot-product attention, any row program: a softmax
with a scale or a mask, a ReLU attention ...); written by hand too.

Ports ``x0`` = a [..., M, K] (queries), ``x1`` = b [..., K, N] (keys,
transposed), ``x2`` = c [..., N, P] (values), then the row program's
other inputs ``x3 ...``; y [..., M, P].  Attribute ``program``: a rowwise
program over the rows of the scores (axes 1) whose input 0 is the scores
and input k >= 1 is port ``x{k+2}`` (a scale, a mask, broadcast to the
scores' shape).  The batch dims (all but the last two) broadcast as
matmul's; c's and the row inputs' must broadcast to the scores'.

The lowering runs one instance per block of rows of one matrix of the
batch: a register-tiled product of the block's rows of ``a`` with ``b``
into a private [rows, N] array, the row program on each of its rows in
place, and a register-tiled product of the block with ``c`` into y.
N must be a fixed size (the private array's).
"""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ...errors import VerificationError
from ..kernel import ArrayDecl, Expr, Intrinsic, Load
from ..types import BufferType
from . import rowwise
from .dims import broadcast_shape, require_concrete, require_equal
from .linear import product_shape, require_matrix
from .lowering import KernelBuilder, add, const_value, div, mul
from .lowering import product as size_product
from .packed_products import packed_tile
from .matrix_tiles import VECTOR_K_STEPS, MatrixView, clamped_rows, reduction, store_tile
from .spec import REQUIRED, OpContext, TensorOpSpec
from .tiled import ArrayTile, column_tiles, i64

OPERANDS = 3
"""Ports before the row program's inputs: a, b, c."""
GROUP_ELEMENTS = 65536
"""Largest private block of scores an instance keeps (elements: 256 KiB of
f32, in a core's L2), where blocks of rows share packed panels of x1."""
MAX_GROUP = 4
"""Most blocks of rows an instance computes."""


def _scores_type(ctx: OpContext) -> BufferType:
    for port in ("x0", "x1", "x2"):
        if not ctx.has(port):
            ctx.fail(f"input '{port}' is missing: attention takes a (x0), b (x1) and c (x2)",
                     "connect the queries, the transposed keys and the values", port)
    require_matrix(ctx, "x2")
    shape = product_shape(ctx, "x0", "x1")
    products = {port: ctx.types[port] for port in ("x0", "x1", "x2")}
    element = OpContext(ctx.spec, products, ctx.attrs, ctx.node).float_element()
    return BufferType(element, shape)


def _row_ports(ports) -> list[str]:
    """The row program's inputs 1, 2 ... among an attention's ``ports``
    (x0 ... and y, in order): x3 ..."""
    return [port for port in ports if port != "y"][OPERANDS:]


def _row_context(ctx: OpContext, scores: BufferType) -> OpContext:
    """The rowwise op's context of the row program: input 0 the scores,
    input k the port x{k+2}."""
    types = {"x0": scores}
    for index, port in enumerate(_row_ports(ctx.types), start=1):
        types[f"x{index}"] = ctx.types[port]
    return OpContext(rowwise.ROWWISE, types, {"axes": 1, "program": ctx.attrs["program"]},
                     ctx.node)


def checked(ctx: OpContext) -> tuple[BufferType, tuple, list[str]]:
    """(the scores' type, the row program, its values' levels)."""
    scores = _scores_type(ctx)
    row_ctx = _row_context(ctx, scores)
    try:
        _, program, levels = rowwise.checked(row_ctx)
        shape = rowwise.result_shape(row_ctx)
    except VerificationError as error:
        ctx.fail("its row program (input 0: the scores x0 @ x1; input k: port x{k+2}): "
                 + error.diagnostics[0].message, error.diagnostics[0].fix or "", "program")
    if tuple(shape) != tuple(scores.shape):
        ctx.fail(f"the row program's inputs broadcast the scores {scores.shape} to {shape}",
                 "give the row inputs shapes that broadcast to the scores'", "program")
    c = ctx.shape("x2")
    require_equal(ctx, c[-2], scores.shape[-1], "the rows of 'x2'", "the columns of the "
                  "scores (N)", "x2")
    batch = broadcast_shape(ctx, ("x2", "x0"), [c[:-2], scores.shape[:-2]])
    if batch != tuple(scores.shape[:-2]):
        ctx.fail(f"the batch dims of 'x2' {ctx.types['x2']} broadcast the scores' "
                 f"{scores.shape[:-2]} to {batch}",
                 "give 'x2' batch dims that broadcast to those of x0 @ x1", "x2")
    return scores, program, levels


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    scores, _, _ = checked(ctx)
    require_concrete(ctx, scores.shape[-1], "the columns of the scores (N, from 'x1')", "x1")
    return {"y": BufferType(scores.element, tuple(scores.shape[:-1]) + (ctx.shape("x2")[-1],))}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    scores, program, _ = checked(ctx)
    kind = x["x0"].dtype.type
    product = np.matmul(x["x0"], x["x1"]).astype(kind, copy=False)
    extra = {f"x{k}": x[port] for k, port in enumerate(_row_ports(x), start=1)}
    rows = rowwise.ROWWISE.evaluate({"x0": product, **extra}, {"axes": 1, "program": program},
                                    ctx.node)["y"]
    return {"y": np.matmul(rows, x["x2"]).astype(kind, copy=False)}


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    scores_type, program, levels = checked(b.ctx)
    dims = [b.dim("y", axis) for axis in range(len(scores_type.shape) - 1)]
    batch, out_rows = dims[:-1], dims[-1]
    inner, keys, values = b.dim("x0", -1), const_value(b.dim("x1", -1)), \
        const_value(b.dim("y", -1))
    fixed_rows = const_value(out_rows)
    tile_rows, tile_cols = packed_tile(b.tiles) if b.tiles.vectors else (b.tiles.rows,
                                                                          b.tiles.cols)
    rows = tile_rows if fixed_rows is None else min(tile_rows, fixed_rows)
    matrices = size_product(batch) if batch else i64(1)
    fixed_matrices = const_value(matrices)
    group = _blocks_per_instance(b, rows, keys, -(-fixed_rows // rows) * fixed_matrices) \
        if None not in (fixed_rows, fixed_matrices, const_value(inner)) else 1
    span = rows * group
    ragged = fixed_rows is None or fixed_rows % span != 0
    spans = div(add(out_rows, i64(span - 1)), i64(span))
    instance = b.instance()
    block = b.let("rb", instance % spans) if batch else instance
    batch_flat = b.let("bi", div(instance, spans)) if batch else i64(0)
    indices = b.unflatten(batch_flat, batch, [f"batch{a}" for a in range(len(batch))]) \
        if batch else []
    views = {port: MatrixView(port, tuple(b.dims(port)[:-2]), b.dim(port, -2), b.dim(port, -1))
             for port in ("x0", "x1", "x2", "y")}
    bases = {port: b.let(f"{port}0", view.offset(b, indices)) for port, view in views.items()}
    m0 = b.let("m0", mul(block, i64(span)))
    element = b.element("y")
    scores = b.fresh("scores")
    b.emit(ArrayDecl(scores, element, (span, keys), "private", zeroed=False))

    def load(port: str, row: Expr, col: Expr) -> Load:
        return b.load(port, views[port].index(bases[port], row, col))

    def product(lhs, count: Expr, rhs, width: int, emit, pack: bool) -> None:
        """emit(tile, first, ms, n0, w) for the tiles of rows of lhs(row, k)
        (``row`` within the instance's span) times rhs(k, column), each
        block of ``rows`` rows (the first ``first``, ``ms`` in y) in turn:
        where ``pack``, a tile's columns of rhs copied to a private panel
        first, which the blocks share."""
        def tile(n0: Expr, w: int) -> None:
            column = lambda k, j: rhs(k, add(n0, j))  # noqa: E731
            if pack:
                column = _packed_panel(b, count, w, column)
            with _blocks(b, group) as t:
                first = mul(t, i64(rows))
                ms = [add(m0, add(first, i64(r))) for r in range(rows)]
                reads = clamped_rows(b, ms, out_rows, ragged)
                acc = ArrayTile(b, rows, w)

                def step(k: Expr) -> None:
                    acc.accumulate([b.let("av", lhs(add(first, i64(r)), reads[r], k))
                                    for r in range(rows)], lambda j: column(k, j))
                reduction(b, count, step, VECTOR_K_STEPS if b.tiles.vectors else 1)
                emit(acc, first, ms, n0, w)
        column_tiles(b, width, tile, tile_cols)

    def keep_scores(acc: ArrayTile, first: Expr, ms, n0: Expr, w: int) -> None:
        for r in range(rows):
            acc.store(r, lambda j, value, r=r: b.store(
                scores, (add(first, i64(r)), add(n0, j)), value), stop=w)
    product(lambda row, m, k: load("x0", m, k), inner, lambda k, n: load("x1", k, n), keys,
            keep_scores, pack=group > 1)
    _lower_rows(b, scores, (span, keys), program, levels, scores_type, indices, batch_flat,
                m0, ragged)

    def store_results(acc: ArrayTile, first: Expr, ms, n0: Expr, w: int) -> None:
        store_tile(b, acc, ms, out_rows, ragged,
                   lambda m, j, value: b.store("y", views["y"].index(bases["y"], m, add(n0, j)),
                                               value), w)
    product(lambda row, m, k: Load(scores, (row, k), element), i64(keys),
            lambda k, n: load("x2", k, n), values, store_results, pack=False)
    return (mul(matrices, spans),)


def _blocks_per_instance(b: KernelBuilder, rows: int, keys: int, blocks: int) -> int:
    """Blocks of ``rows`` rows an instance computes, sharing packed panels
    of the keys: up to MAX_GROUP, the private scores within
    GROUP_ELEMENTS, and instances enough for four per core."""
    return max(1, min(MAX_GROUP, GROUP_ELEMENTS // (rows * keys),
                      blocks // (4 * b.tiles.cores)))


def _blocks(b: KernelBuilder, group: int):
    """A loop over an instance's blocks, or block 0 alone."""
    return b.loop("t", i64(group)) if group > 1 else nullcontext(i64(0))


def _packed_panel(b: KernelBuilder, count: Expr, width: int, column):
    """Copy column(k, j) for k < count, j < width into a private panel;
    the panel's column(k, j)."""
    panel = b.fresh("panel")
    element = b.element("y")
    b.emit(ArrayDecl(panel, element, (const_value(count), width), "private", zeroed=False))
    with b.loop("k", count) as k:
        with b.loop("j", i64(width), unroll=width if b.tiles.vectors else None) as j:
            b.store(panel, (k, j), column(k, j))
    return lambda k, j: Load(panel, (k, j), element)


def _lower_rows(b: KernelBuilder, scores: str, block: tuple[int, int], program: tuple,
                levels: list[str], scores_type: BufferType, batch: list[Expr],
                batch_flat: Expr, m0: Expr, ragged: bool) -> None:
    """The row program on each row of the private ``scores`` block (rows
    ``m0 ...`` of matrix ``batch_flat``, at ``batch`` indices), in place.
    Rows past the last (``ragged``) read the row inputs at the last row;
    they are computed and not stored."""
    rows, keys = block
    element = b.element("y")
    ports = _row_ports(b.types)
    out_rows = b.dim("y", -2)
    with b.loop("r", i64(rows)) as r:
        m = add(m0, r)
        if ragged:
            m = b.let("mr", Intrinsic("min", (m, add(out_rows, i64(-1)))))
        read_port = rowwise.row_reader(b, ports, tuple(scores_type.shape), batch + [m],
                                       add(mul(batch_flat, out_rows), m), i64(keys))

        def read(k: int, j: Expr | None) -> Expr:
            return Load(scores, (r, j), element) if k == 0 else read_port(ports[k - 1], j)
        rowwise.lower_row(b, program, levels, i64(keys), read,
                          lambda j, value: b.store(scores, (r, j), value),
                          lambda j: Load(scores, (r, j), element), in_place=True)


ATTENTION = TensorOpSpec(
    "attention", ("x0",), ("y",), _infer, _evaluate, _lower,
    attrs={"program": REQUIRED}, variadic=True,
    summary="y = rows(x0 @ x1) @ x2: a rowwise program (a softmax) between two matrix "
            "products, the scores never stored whole (scaled dot-product attention)")

OPS = (ATTENTION,)
