"""The body ``register-tile`` gives a node (see register_tile.py): one
instance computes a ``chunk`` x ``panel`` block of the results, as GEMM
libraries do::

    for each block of kblock steps of the loop:
        copy the column reads of the block into panels    (pack)
        for each tile of ``cols`` columns:
            for each block of ``rows`` rows:
                accumulators of the rows x cols results in registers
                for k in the block: the loop's body for every result
    every result: the epilogue

Accumulators live between blocks of steps in a private array of the
chunk's results; every result still takes the loop's steps in order, so
results are those of the program as written (up to fused multiply-adds).
Where the node has another dimension that the row reads and the loop's
bounds do not follow (a convolution's output rows: the filters are the
same for each), an instance takes ``group`` of its values, as many as
that array holds (register_tile_group_dim.py): the rows' panel of a block
is packed once and serves every one of them, each with its own column
panel.
Rows past the end read the last row (their results are not stored), and
panels past the last column repeat the last column. A triangle run over
the box around it stores under a guard (register_tile_plan.half_plane):
a block whose four corners all fail it stores nothing, and is skipped.
"""
from __future__ import annotations

import contextlib
import dataclasses

from ..ir.kernel import (
    ArrayDecl, Assign, Binary, Const, Expr, InstanceId, KernelFunction, Let, Load, Stmt,
    Store, Unary, Var,
)
from ..ir.tensor_ops.lowering import KernelBuilder, add, minimum, mul
from ..ir.types import I64
from ..ir.visit import children, replace_expressions, rewrite, walk
from .names import declared_names, function_names, substitute
from .register_tile_group_dim import Grouped
from .register_tile_plan import adjacent_along, at_instance, half_plane
from .register_tile_schedule import (
    Schedule, block_counts, other_instances, as_index, ceil_div, group_size, i64,
)


def tiled_body(function: KernelFunction, grouped: Grouped, s: Schedule,
               replication: tuple[Expr, ...]) -> tuple[Stmt, ...]:
    """The body for a node of ``replication`` run as
    ``tiled_replication(...)`` instances."""
    return _Writer(function, grouped, s).body(replication)


class _Writer:
    def __init__(self, function: KernelFunction, grouped: Grouped, s: Schedule):
        plan, self.group_dim = grouped
        self.plan, self.s = plan, s
        self.b = KernelBuilder(None, tuple(p for p in function.params if p.is_buffer))
        self.b.reserve(function_names(function))
        self.types = {acc.name: acc.type for acc in plan.accumulators}
        self.packs_along_steps = bool(plan.packed) and adjacent_along(
            plan, plan.packed, plan.cols) == "steps"

    def body(self, replication: tuple[Expr, ...]) -> tuple[Stmt, ...]:
        b, s, plan = self.b, self.s, self.plan
        self.rows_total = b.let("rows_total", as_index(replication[plan.rows]))
        self.cols_total = b.let("cols_total", as_index(replication[plan.cols]))
        self.chunk = chunk = b.let("chunk", s.chunk_rows(self.rows_total, self.cols_total,
                                            other_instances(plan, replication)))
        counts = [self.rows_total if d == plan.rows else self.cols_total if d == plan.cols
                  else size for d, size in enumerate(replication)]
        self.group = None
        if self.group_dim is not None:
            self.group_count = b.let("group_count", as_index(replication[self.group_dim]))
            self.group = b.let("group", group_size(plan, s, replication, self.group_dim, chunk))
        counts = block_counts(plan, s, counts, chunk, self.group_dim, self.group)
        flat = InstanceId(0)
        self.ids, self.counts = {}, {}
        for dim in reversed(range(len(replication))):
            size = b.let("blocks" if dim in (plan.rows, plan.cols) else "count", counts[dim])
            self.ids[dim] = b.let("at", flat % size) if dim else b.let("at", flat)
            flat = flat / size
            if dim not in (plan.rows, plan.cols):
                self.counts[dim] = self.group_count if dim == self.group_dim else size
        for stmt in self._at(plan.uniform, None, None):
            b.emit(stmt)
        if self.group_dim is not None:
            self.group0 = b.let("group0", mul(self.ids[self.group_dim], self.group))
            self.block_ids = dict(self.ids)
        self.row0 = b.let("row0", mul(self.ids[plan.rows], chunk))
        self.col0 = b.let("col0", mul(self.ids[plan.cols], i64(s.panel)))
        self.row_blocks = b.let("row_blocks", ceil_div(
            minimum(chunk, self.rows_total - self.row0), s.rows))
        self.col_tiles = b.let("col_tiles", ceil_div(
            minimum(i64(s.panel), self.cols_total - self.col0), s.cols))
        self.pitch = i64(s.panel) if self.group_dim is None else \
            b.let("pitch", mul(self.col_tiles, i64(s.cols)))
        self.slab = mul(mul(self.row_blocks, i64(s.rows)), self.pitch)
        self.slab_at = i64(0)
        self.sums = {}
        for acc in plan.accumulators:
            self.sums[acc.name] = b.fresh(f"{acc.name}_sums")
            b.emit(ArrayDecl(self.sums[acc.name], acc.type, (s.chunk * s.panel,),
                             zeroed=False))
        reached = self._reaching_results()
        if reached is None:
            self._initial_values()
        self.panels, self.row_panels = {}, {}
        if s.pack:
            for value in plan.col_values or plan.packed:
                self.panels[value] = b.fresh("panel")
                b.emit(ArrayDecl(self.panels[value], value.type,
                                 (s.panel // s.cols * s.kblock * s.cols,), zeroed=False))
            for value in plan.row_values:
                self.row_panels[value] = b.fresh("row_panel")
                b.emit(ArrayDecl(self.row_panels[value], value.type, (s.chunk * s.kblock,),
                                 zeroed=False))
        with b.guard(reached is not None, reached):
            if reached is not None:
                self._initial_values()
            self._steps()
            self._epilogue()
        return b.finish()

    def _reaching_results(self) -> Expr | None:
        """The test that a block stores something, where it may store
        nothing (None elsewhere): where every effect of the results is
        under one guard comparing expressions linear in the rows and
        columns (a triangle run over its box, triangle_boxes.py), a block
        none of whose corners meets the guard has none, and is skipped
        whole."""
        plan = self.plan
        guard = half_plane(plan)
        if guard is None or self.group_dim is not None:
            return None
        last_row = minimum(add(self.row0, self.chunk), self.rows_total) - i64(1)
        last_col = minimum(add(self.col0, i64(self.s.panel)), self.cols_total) - i64(1)
        corners = [self._at(guard, row, col) for row in (self.row0, last_row)
                   for col in (self.col0, last_col)]
        reached = corners[0]
        for corner in corners[1:]:
            reached = Binary("lor", reached, corner)
        return reached

    # where a result's accumulators are kept ------------------------------
    def _sum_at(self, block: Expr, row: Expr, tile: Expr, column: Expr) -> Expr:
        s = self.s
        return add(self.slab_at, add(mul(add(mul(block, i64(s.rows)), row), self.pitch),
                                     add(mul(tile, i64(s.cols)), column)))

    @contextlib.contextmanager
    def _each_group_value(self):
        """The statements emitted inside run for each value of the grouped
        dimension this instance takes (once where there is none), with its
        own accumulators."""
        if self.group_dim is None:
            yield
            return
        b = self.b
        with b.loop("g", self.group) as g:
            at = b.let("grouped", add(self.group0, g))
            with b.when(at.lt(self.group_count)):
                self.ids = {**self.block_ids, self.group_dim: at}
                self.slab_at = mul(g, self.slab)
                yield
        self.ids, self.slab_at = self.block_ids, i64(0)

    def _each_result(self, emit) -> None:
        """``emit(block, row, tile, column)`` for every result of the
        chunk, rows in a loop (for code run once per result)."""
        b, s = self.b, self.s
        with b.loop("rb", self.row_blocks) as block, b.loop("r", i64(s.rows)) as row:
            with b.loop("t", self.col_tiles) as tile, b.loop("c", i64(s.cols)) as column:
                emit(block, row, tile, column)

    def _initial_values(self) -> None:
        """Every result's accumulators set to their starting values (the
        array is declared undefined: only the chunk's results are set)."""
        b = self.b
        starting = [dataclasses.replace(acc, value=Const(0, acc.type))
                    if acc.value is None else acc for acc in self.plan.accumulators]

        def emit(block, row, tile, column):
            at = self._clamped_row(add(mul(block, i64(self.s.rows)), row)), \
                self._clamped_col(tile, column)
            for acc in starting:
                b.store(self.sums[acc.name], (self._sum_at(block, row, tile, column),),
                        self._at(acc.value, *at))
        with self._each_group_value():
            self._each_result(emit)

    # the loop's steps -----------------------------------------------------
    def _steps(self) -> None:
        b, s, loop = self.b, self.s, self.plan.loop
        count = b.let("steps", loop.stop - loop.start)
        with b.loop("kb", ceil_div(count, s.kblock)) as k_block:
            first = b.let("k0", add(loop.start, mul(k_block, i64(s.kblock))))
            steps = b.let("ks", minimum(i64(s.kblock), loop.stop - first))
            self._pack_rows(first, steps)
            with self._each_group_value():
                self._pack(first, steps)
                self._tiles(first, steps)

    def _tiles(self, first: Var, steps: Var) -> None:
        """The block's steps for every tile of the chunk."""
        b, s = self.b, self.s
        with b.loop("t", self.col_tiles) as tile, b.loop("rb", self.row_blocks) as block:
            rows = self._block_rows(block)
            tiles = self._load_tiles(block, tile)
            with b.loop("kk", steps) as step:
                k = add(first, step)
                packed_rows = [{value: b.let("packed", Load(
                    panel, (self._row_panel_at(block, step, i64(r)),), value.type))
                    for value, panel in self.row_panels.items()} for r in range(s.rows)]
                with b.loop("c", i64(s.cols), unroll=s.cols) as column:
                    self._step(k, step, tile, column, rows, tiles, packed_rows)
            self._store_tiles(block, tile, tiles)

    def _pack_rows(self, first: Var, steps: Var) -> None:
        """The block's row reads into the rows' panels."""
        b = self.b
        if self.row_panels:
            with b.loop("rb", self.row_blocks) as block:
                rows = self._block_rows(block)
                with b.loop("kk", steps) as step:
                    for read, panel in self.row_panels.items():
                        value = substitute(read, values={self.plan.loop.var: add(first, step)})
                        for r, row in enumerate(rows):
                            b.store(panel, (self._row_panel_at(block, step, i64(r)),),
                                    self._at(value, row, self.col0))

    def _pack(self, first: Var, steps: Var) -> None:
        """The block's column reads into the column panels."""
        b, s = self.b, self.s
        if not self.panels:
            return
        with b.loop("t", self.col_tiles) as tile:
            whole = self._col(tile, i64(s.cols)).le(self.cols_total)
            for clamp in (False, True):
                with b.when(whole if not clamp else Unary("not", whole)):
                    self._pack_tile(first, steps, tile, clamp)

    def _pack_tile(self, first: Var, steps: Var, tile: Var, clamp: bool) -> None:
        """A tile's columns of the block into the panels; ``clamp``: the
        last tile, past the last column.  The copy's inner loop runs along
        the reads' contiguous elements: the columns (``b[k, j]``), or the
        steps where the reads are adjacent along the loop instead
        (``b[j, k]``, a linear layer's weights), which packing by columns
        would read a row apart each.  Where the columns are inner, index
        values that divide and follow only the column (a flattened
        pixel's row and column, ``p // OW`` and ``p % OW``) are computed
        once per column before the copy instead of at every step."""
        b, s = self.b, self.s
        step_at, column_at = Var(b.fresh("kk"), I64), Var(b.fresh("c"), I64)
        col = self._clamped_col(tile, column_at) if clamp else self._col(tile, column_at)
        at_step = {self.plan.loop.var: add(first, step_at)}
        values = {panel: self._at(substitute(load, values=at_step), self.row0, col)
                  for load, panel in self.panels.items()}
        per_column = {} if self.packs_along_steps else {
            part: b.fresh("column_index")
            for part in divisions_along(tuple(values.values()), column_at.name, step_at.name)}
        if per_column:
            for part, array in per_column.items():
                b.emit(ArrayDecl(array, part.type, (s.cols,), zeroed=False))
            with b.loop("c", i64(s.cols)) as column:
                for part, array in per_column.items():
                    b.store(array, (column,), substitute(part, values={column_at.name: column}))
        loops = (b.loop("c", i64(s.cols)), b.loop("kk", steps)) if self.packs_along_steps \
            else (b.loop("kk", steps), b.loop("c", i64(s.cols)))
        with loops[0] as outer, loops[1] as inner:
            step, column = (inner, outer) if self.packs_along_steps else (outer, inner)
            for panel, value in values.items():
                value = rewrite(value, lambda node: Load(per_column[node], (column_at,), node.type)
                                if node in per_column else None)
                b.store(panel, (self._panel_at(tile, step, column),),
                        substitute(value, values={step_at.name: step, column_at.name: column}))

    def _row_panel_at(self, block: Expr, step: Expr, row: Expr) -> Expr:
        s = self.s
        return add(mul(add(mul(block, i64(s.kblock)), step), i64(s.rows)), row)

    def _panel_at(self, tile: Expr, step: Expr, column: Expr) -> Expr:
        s = self.s
        return add(mul(add(mul(tile, i64(s.kblock)), step), i64(s.cols)), column)

    def _load_tiles(self, block: Var, tile: Var) -> dict[str, str]:
        b, s = self.b, self.s
        tiles = {}
        for acc in self.plan.accumulators:
            tiles[acc.name] = b.fresh(f"{acc.name}_tile")
            b.emit(ArrayDecl(tiles[acc.name], acc.type, (s.rows, s.cols), zeroed=False))
        with b.loop("c", i64(s.cols), unroll=s.cols) as column:
            for r in range(s.rows):
                for acc, name in tiles.items():
                    b.store(name, (i64(r), column), Load(
                        self.sums[acc], (self._sum_at(block, i64(r), tile, column),),
                        self.types[acc]))
        return tiles

    def _store_tiles(self, block: Var, tile: Var, tiles: dict[str, str]) -> None:
        b, s = self.b, self.s
        with b.loop("c", i64(s.cols), unroll=s.cols) as column:
            for r in range(s.rows):
                for acc, name in tiles.items():
                    b.store(self.sums[acc], (self._sum_at(block, i64(r), tile, column),),
                            Load(name, (i64(r), column), self.types[acc]))

    def _step(self, k: Expr, step: Var, tile: Var, column: Var, rows: list[Var],
              tiles: dict[str, str], packed_rows: list[dict]) -> None:
        b = self.b
        packed = {load: b.let("packed", Load(panel, (self._panel_at(tile, step, column),),
                                             load.type))
                  for load, panel in self.panels.items()}
        col = self._clamped_col(tile, column)
        for r, row in enumerate(rows):
            stmts = cell_body(b, self.plan.steps, {**packed, **packed_rows[r]}, tiles,
                              (i64(r), column), self.plan.loop.var, k)
            for stmt in self._at(stmts, row, col):
                b.emit(stmt)

    # results --------------------------------------------------------------
    def _epilogue(self) -> None:
        b, plan = self.b, self.plan

        def emit(block, row, tile, column):
            at_row = add(add(self.row0, mul(block, i64(self.s.rows))), row)
            at_col = self._col(tile, column)
            inside = Binary("land", at_row.lt(self.rows_total), at_col.lt(self.cols_total))
            with b.when(inside):
                for acc in plan.accumulators:
                    b.emit(Let(acc.name, acc.type, Load(
                        self.sums[acc.name], (self._sum_at(block, row, tile, column),),
                        acc.type)))
                for stmt in self._at(plan.results, at_row, at_col):
                    b.emit(stmt)
        with self._each_group_value():
            self._each_result(emit)

    # helpers --------------------------------------------------------------
    def _at(self, root, row: Expr | None, col: Expr | None):
        """``root`` for the instance of the original node at ``row`` and
        ``col`` in this block's other dimensions."""
        plan = self.plan
        ids = {**self.ids, plan.rows: row, plan.cols: col}
        counts = {**self.counts, plan.rows: self.rows_total, plan.cols: self.cols_total}
        return at_instance(root, {d: v for d, v in ids.items() if v is not None}, counts)

    def _block_rows(self, block: Var) -> list[Var]:
        """The rows of row block ``block``, each clamped to the last."""
        return [self.b.let("row", self._clamped_row(add(mul(block, i64(self.s.rows)), i64(r))))
                for r in range(self.s.rows)]

    def _clamped_row(self, offset: Expr) -> Expr:
        return minimum(add(self.row0, offset), self.rows_total - i64(1))

    def _col(self, tile: Expr, column: Expr) -> Expr:
        return add(add(self.col0, mul(tile, i64(self.s.cols))), column)

    def _clamped_col(self, tile: Expr, column: Expr) -> Expr:
        return minimum(self._col(tile, column), self.cols_total - i64(1))


def divisions_along(exprs: tuple[Expr, ...], column: str, step: str) -> list[Expr]:
    """The largest integer parts of ``exprs`` that read variable ``column``
    but not ``step``, divide (``/``, ``%``) and load nothing."""
    found: list[Expr] = []

    def visit(expr: Expr) -> None:
        inside = list(walk(expr))
        names = {n.name for n in inside if isinstance(n, Var)}
        if column in names and step not in names and not expr.type.is_float \
                and not any(isinstance(n, Load) for n in inside) \
                and any(isinstance(n, Binary) and n.op in ("div", "rem") for n in inside):
            found.append(expr)
            return
        for child in children(expr):
            visit(child)
    for expr in exprs:
        visit(expr)
    return list(dict.fromkeys(found))


def cell_body(b: KernelBuilder, loop_body: tuple[Stmt, ...], reads: dict[Load, Expr],
              tiles: dict[str, str], cell: tuple[Expr, ...], loop_var: str,
              k: Expr) -> tuple[Stmt, ...]:
    """The loop's body for one result at step ``k``: the loads in
    ``reads`` replaced by their values (packed copies), accumulators read
    and set in their ``tiles`` at ``cell``, its own variables renamed."""
    def visit(node):
        if isinstance(node, Var) and node.name in tiles:
            return Load(tiles[node.name], cell, node.type)
        return None

    def assign(node):
        if isinstance(node, Assign) and node.name in tiles:
            return Store(tiles[node.name], cell, node.value)
        return None
    # reads are matched before anything in them changes, reads before writes
    stmts = rewrite(rewrite(replace_expressions(loop_body, reads), visit), assign)
    return substitute(stmts, renames={name: b.fresh(name) for name in declared_names(stmts)},
                      values={loop_var: k})
