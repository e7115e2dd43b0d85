"""``register-tile{form=group}``: the body for targets with work groups
and local memory (GPUs), as CLBlast's and Nugteren's OpenCL GEMMs are
written.

A work group of ``group`` x ``group`` instances computes a block of
``group * rows`` x ``group * cols`` results; each instance a ``rows`` x
``cols`` micro-tile of them, interleaved (rows ``r0 + lane + i * group``)
so that neighbouring instances read neighbouring local words::

    for each block of kblock steps of the loop:
        the group copies the block's row reads and column reads into
        local tiles (consecutive instances, consecutive addresses)
        barrier
        for k in the block: the loop's body for each result of the
        micro-tile, from the tiles, into accumulators in registers
        barrier
    each result: the epilogue

The node runs in whole (padded) groups: instances past the results take
part in the copies and barriers (their reads clamped), and store nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.kernel import (
    ArrayDecl, Barrier, Binary, Expr, InstanceId, KernelFunction, Let, Load, Stmt, Var,
)
from ..ir.tensor_ops.lowering import KernelBuilder, add, minimum, mul
from .names import function_names, substitute
from .register_tile_body import _index, cell_body, ceil_div, i64
from .register_tile_plan import NestPlan, at_instance


@dataclass(frozen=True)
class GroupSchedule:
    rows: int
    cols: int
    group: int
    kblock: int
    unroll: int | None = None

    def replication(self, plan: NestPlan, replication: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """One instance per micro-tile (the groups padded past the end)."""
        sizes = list(replication)
        sizes[plan.rows] = ceil_div(replication[plan.rows], self.rows)
        sizes[plan.cols] = ceil_div(replication[plan.cols], self.cols)
        return tuple(sizes)


def group_body(function: KernelFunction, plan: NestPlan, s: GroupSchedule,
               replication: tuple[Expr, ...]) -> tuple[Stmt, ...]:
    b = KernelBuilder(None, tuple(p for p in function.params if p.is_buffer))
    b.reserve(function_names(function))
    rows_total = b.let("rows_total", _index(replication[plan.rows]))
    cols_total = b.let("cols_total", _index(replication[plan.cols]))
    ids = {d: InstanceId(d) for d in range(len(replication))}
    lane = {d: b.let("lane", InstanceId(d) % i64(s.group)) for d in (plan.rows, plan.cols)}
    base = {d: b.let("first", mul(Binary("div", InstanceId(d), i64(s.group)),
                                  i64(s.group * (s.rows if d == plan.rows else s.cols))))
            for d in (plan.rows, plan.cols)}
    counts = {plan.rows: rows_total, plan.cols: cols_total}

    def at(root, row, col):
        return at_instance(root, {**ids, plan.rows: row, plan.cols: col}, counts)

    for stmt in at_instance(plan.uniform, {}, counts):
        b.emit(stmt)
    block_rows, block_cols = s.group * s.rows, s.group * s.cols
    row_tiles = {load: b.fresh("rows_tile") for load in plan.row_packed}
    col_tiles = {load: b.fresh("cols_tile") for load in plan.packed}
    # A row tile is filled along the loop's steps: a word more per step
    # keeps those stores in different banks.
    for tiles, width in ((row_tiles, block_rows + 1), (col_tiles, block_cols)):
        for load, name in tiles.items():
            b.emit(ArrayDecl(name, load.type, (s.kblock, width), "local"))
    accs = {}
    for acc in plan.accumulators:
        accs[acc.name] = b.fresh(f"{acc.name}_tile")
        b.emit(ArrayDecl(accs[acc.name], acc.type, (s.rows, s.cols)))
    my_rows = [add(base[plan.rows], add(lane[plan.rows], i64(r * s.group)))
               for r in range(s.rows)]
    my_cols = [add(base[plan.cols], add(lane[plan.cols], i64(c * s.group)))
               for c in range(s.cols)]
    clamped_rows = [b.let("row", minimum(r, rows_total - i64(1))) for r in my_rows]
    clamped_cols = [b.let("col", minimum(c, cols_total - i64(1))) for c in my_cols]
    for acc in plan.accumulators:
        if acc.value is not None:
            for r in range(s.rows):
                for c in range(s.cols):
                    b.store(accs[acc.name], (i64(r), i64(c)),
                            at(acc.value, clamped_rows[r], clamped_cols[c]))
    loop = plan.loop
    me = b.let("me", add(mul(lane[plan.rows], i64(s.group)), lane[plan.cols]))
    count = b.let("steps", loop.stop - loop.start)
    with b.loop("kb", ceil_div(count, s.kblock)) as k_block:
        first = b.let("k0", add(loop.start, mul(k_block, i64(s.kblock))))
        steps = b.let("ks", minimum(i64(s.kblock), loop.stop - first))
        _fill(b, s, row_tiles, block_rows, me, first, steps, True,
              lambda load, k, i: at(substitute(load, values={loop.var: k}), minimum(
                  add(base[plan.rows], i), rows_total - i64(1)), clamped_cols[0]))
        _fill(b, s, col_tiles, block_cols, me, first, steps, False,
              lambda load, k, i: at(substitute(load, values={loop.var: k}), clamped_rows[0],
                                    minimum(add(base[plan.cols], i), cols_total - i64(1))))
        b.emit(Barrier())
        loop_body = substitute(loop.body, values=plan.index_values)
        with b.loop("kk", steps, unroll=s.unroll) as step:
            row_values = [{load: b.let("a", Load(name, (step, add(lane[plan.rows],
                                                                 i64(r * s.group))), load.type))
                           for load, name in row_tiles.items()} for r in range(s.rows)]
            col_values = [{load: b.let("b", Load(name, (step, add(lane[plan.cols],
                                                                 i64(c * s.group))), load.type))
                           for load, name in col_tiles.items()} for c in range(s.cols)]
            for r in range(s.rows):
                for c in range(s.cols):
                    stmts = cell_body(b, loop_body, {**row_values[r], **col_values[c]}, accs,
                                      (i64(r), i64(c)), loop.var, add(first, step))
                    for stmt in at(stmts, clamped_rows[r], clamped_cols[c]):
                        b.emit(stmt)
        b.emit(Barrier())
    tail = substitute(plan.sunk + plan.epilogue, values=plan.index_values)
    for r in range(s.rows):
        for c in range(s.cols):
            inside = Binary("land", my_rows[r].lt(rows_total), my_cols[c].lt(cols_total))
            with b.when(inside):
                for acc in plan.accumulators:
                    b.emit(Let(acc.name, acc.type, Load(accs[acc.name], (i64(r), i64(c)),
                                                        acc.type)))
                for stmt in at(tail, my_rows[r], my_cols[c]):
                    b.emit(stmt)
    return b.finish()


def _fill(b: KernelBuilder, s: GroupSchedule, tiles: dict, width: int, me: Var, first: Var,
          steps: Var, steps_fastest: bool, value) -> None:
    """The group copies the block's ``steps`` x ``width`` values of each
    read into its tile, ``value(load, k, offset)`` giving one; consecutive
    instances take consecutive steps (reads along the loop, a row of
    ``a[i, k]``) or consecutive offsets (``b[k, j]``), so that they read
    consecutive addresses."""
    items = s.group * s.group
    for load, name in tiles.items():
        with b.loop("e", i64(-(-s.kblock * width // items))) as round_:
            at = b.let("e", add(mul(round_, i64(items)), me))
            if steps_fastest:
                step, offset = at % i64(s.kblock), Binary("div", at, i64(s.kblock))
            else:
                step, offset = Binary("div", at, i64(width)), at % i64(width)
            inside = step.lt(steps)
            if s.kblock * width % items:   # a last round only partly inside the tile
                inside = Binary("land", at.lt(i64(s.kblock * width)), inside)
            with b.when(inside):
                b.store(name, (step, offset), value(load, add(first, step), offset))
