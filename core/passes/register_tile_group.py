"""``register-tile{form=group}``: the body for targets with work groups
and local memory (GPUs), as CLBlast's and Nugteren's OpenCL GEMMs are
written.

A work group of ``group`` x ``group`` instances computes a block of
``group * rows`` x ``group * cols`` results; each instance a ``rows`` x
``cols`` micro-tile of them, interleaved (rows ``r0 + lane + i * group``)
so that neighbouring instances read neighbouring local words::

    read the first block's share into registers
    for each block of kblock steps of the loop:
        store the share into the local tiles of the block's row reads and
        column reads (consecutive instances, consecutive addresses)
        barrier
        read the next block's share into registers (under way meanwhile)
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
from .register_tile_body import cell_body
from .register_tile_schedule import as_index, ceil_div, i64
from .register_tile_plan import NestPlan, adjacent_along, at_instance


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
    rows_total = b.let("rows_total", as_index(replication[plan.rows]))
    cols_total = b.let("cols_total", as_index(replication[plan.cols]))
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
    # Consecutive instances copy consecutive addresses: along the loop's
    # steps for a[i, k] and b[j, k], along the rows or columns for at[k, i]
    # and b[k, j].  A tile filled along the steps takes a word more per
    # step, which keeps those stores in different banks.
    row_steps = adjacent_along(plan, plan.row_packed, plan.rows) != "instances"
    col_steps = adjacent_along(plan, plan.packed, plan.cols) == "steps"
    for tiles, width, steps_fastest in ((row_tiles, block_rows, row_steps),
                                        (col_tiles, block_cols, col_steps)):
        for load, name in tiles.items():
            b.emit(ArrayDecl(name, load.type, (s.kblock, width + (1 if steps_fastest else 0)),
                             "local"))
    accs = {}
    for acc in plan.accumulators:
        accs[acc.name] = b.fresh(f"{acc.name}_tile")
        b.emit(ArrayDecl(accs[acc.name], acc.type, (s.rows, s.cols)))
    # where an instance's results lie in its group's block
    row_offsets = [add(lane[plan.rows], i64(r * s.group)) for r in range(s.rows)]
    col_offsets = [add(lane[plan.cols], i64(c * s.group)) for c in range(s.cols)]
    my_rows = [add(base[plan.rows], offset) for offset in row_offsets]
    my_cols = [add(base[plan.cols], offset) for offset in col_offsets]
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
    blocks = b.let("blocks", ceil_div(count, s.kblock))
    copies = [_Copy(b, s, row_tiles, block_rows, me, row_steps,
                    lambda load, k, i: at(substitute(load, values={loop.var: k}), minimum(
                        add(base[plan.rows], i), rows_total - i64(1)), clamped_cols[0])),
              _Copy(b, s, col_tiles, block_cols, me, col_steps,
                    lambda load, k, i: at(substitute(load, values={loop.var: k}),
                                          clamped_rows[0], minimum(add(base[plan.cols], i),
                                                                   cols_total - i64(1))))]

    def block_at(k_block: Expr) -> tuple[Var, Var]:
        first = b.let("k0", add(loop.start, mul(k_block, i64(s.kblock))))
        return first, b.let("ks", minimum(i64(s.kblock), loop.stop - first))
    with b.when(i64(0).lt(blocks)):
        for copy in copies:
            copy.fetch(*block_at(i64(0)))
    with b.loop("kb", blocks) as k_block:
        first, steps = block_at(k_block)
        for copy in copies:
            copy.put(steps)
        b.emit(Barrier())
        # the next block's reads are under way while this one is computed
        with b.when(add(k_block, i64(1)).lt(blocks)):
            following = block_at(add(k_block, i64(1)))
            for copy in copies:
                copy.fetch(*following)
        with b.loop("kk", steps, unroll=s.unroll) as step:
            row_values = [{load: b.let("a", Load(name, (step, offset), load.type))
                           for load, name in row_tiles.items()} for offset in row_offsets]
            col_values = [{load: b.let("b", Load(name, (step, offset), load.type))
                           for load, name in col_tiles.items()} for offset in col_offsets]
            for r in range(s.rows):
                for c in range(s.cols):
                    stmts = cell_body(b, plan.steps, {**row_values[r], **col_values[c]}, accs,
                                      (i64(r), i64(c)), loop.var, add(first, step))
                    for stmt in at(stmts, clamped_rows[r], clamped_cols[c]):
                        b.emit(stmt)
        b.emit(Barrier())
    for r in range(s.rows):
        for c in range(s.cols):
            inside = Binary("land", my_rows[r].lt(rows_total), my_cols[c].lt(cols_total))
            with b.when(inside):
                for acc in plan.accumulators:
                    b.emit(Let(acc.name, acc.type, Load(accs[acc.name], (i64(r), i64(c)),
                                                        acc.type)))
                for stmt in at(plan.results, my_rows[r], my_cols[c]):
                    b.emit(stmt)
    return b.finish()


class _Copy:
    """Copies of a block of reads into local tiles, in two halves: each
    instance reads its share into registers (``fetch``), then stores them
    into the tiles (``put``), so that the reads of the next block overlap
    the products of this one.  Consecutive instances take consecutive
    steps (``steps_fastest``: reads along the loop, a row of ``a[i, k]``)
    or consecutive offsets (``b[k, j]``), so that they read consecutive
    addresses."""

    def __init__(self, b: KernelBuilder, s: GroupSchedule, tiles: dict, width: int, me: Var,
                 steps_fastest: bool, value):
        self.b, self.s, self.tiles, self.value = b, s, tiles, value
        items = s.group * s.group
        self.places = []
        for round_ in range(-(-s.kblock * width // items)):
            at = add(i64(round_ * items), me)
            if steps_fastest:
                step, offset = at % i64(s.kblock), Binary("div", at, i64(s.kblock))
            else:
                step, offset = Binary("div", at, i64(width)), at % i64(width)
            partial = (round_ + 1) * items > s.kblock * width
            self.places.append((b.let("step", step), b.let("offset", offset),
                                at.lt(i64(s.kblock * width)) if partial else None))
        self.registers = {}
        for load in tiles:
            self.registers[load] = b.fresh("fetched")
            b.emit(ArrayDecl(self.registers[load], load.type, (len(self.places),)))

    def _inside(self, place, steps: Var) -> Expr:
        step, _, partial = place
        return step.lt(steps) if partial is None else Binary("land", partial, step.lt(steps))

    def fetch(self, first: Var, steps: Var) -> None:
        b = self.b
        for load, registers in self.registers.items():
            for index, place in enumerate(self.places):
                step, offset, _ = place
                with b.when(self._inside(place, steps)):
                    b.store(registers, (i64(index),), self.value(load, add(first, step), offset))

    def put(self, steps: Var) -> None:
        b = self.b
        for load, registers in self.registers.items():
            for index, place in enumerate(self.places):
                step, offset, _ = place
                with b.when(self._inside(place, steps)):
                    b.store(self.tiles[load], (step, offset),
                            Load(registers, (i64(index),), load.type))
