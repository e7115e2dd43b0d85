"""The kernel bodies the tile pass makes (see tile.py).

Both run in whole work groups of ``size`` x ``size`` instances (padded
groups): every instance, the padded ones too, takes part in the copies
into local tiles and in the barriers; only the instances inside the
replication (``active``) run the kernel's own statements.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Binary, Const, Expr, ExprStmt, For, If,
    InstanceCount, InstanceId, Intrinsic, KernelFunction, Let, Load, Select, Stmt, Store, Var,
    While,
)
from ..ir.instance_reach import InstanceReach
from ..ir.tensor_ops.lowering import in_range, size as size_of
from ..ir.types import I64
from ..ir.uniformity import Uniformity
from ..ir.visit import map_blocks, rewrite, walk
from .names import NameGenerator


def both(a: Expr, b: Expr) -> Expr:
    return Binary("land", a, b)


def active(dims: tuple[int, ...] = (0, 1)) -> Expr:
    """Whether this instance lies inside the replication along ``dims``."""
    checks = [InstanceId(d).lt(InstanceCount(d)) for d in dims]
    result = checks[0]
    for check in checks[1:]:
        result = both(result, check)
    return result


def lane_lets(size: int, names: NameGenerator) -> tuple[Var, Var, tuple[Stmt, ...]]:
    """(row lane, column lane, their declarations) within the group."""
    row, column = Var(names.fresh("lane_row"), I64), Var(names.fresh("lane_col"), I64)
    return row, column, (Let(row.name, I64, InstanceId(0) % size),
                         Let(column.name, I64, InstanceId(1) % size))


# -- matmul: a loop over k in blocks, its row and column reads from tiles ----

@dataclasses.dataclass(frozen=True)
class BlockedRead:
    """Reads ``buffer[...]`` with the loop variable at index ``k_position``
    and ``other`` (varying only along replication dimension ``dim``) at
    the other index: one tile for all of them."""

    buffer: str
    k_position: int
    other: Expr
    dim: int


def blocked_reads(function: KernelFunction, loop: For, tileable: set[str]
                  ) -> list[tuple[Load, BlockedRead]]:
    """The loads of ``loop``'s body a tile can serve, with their tile."""
    changing = {loop.var} | {n.var for n in walk(loop.body) if isinstance(n, For)} | {
        n.name for n in walk(loop.body) if isinstance(n, (Let, Assign))}
    along_rows, along_columns = Uniformity(function, (0,)), Uniformity(function, (1,))
    found = []
    for load in (n for n in walk(loop.body) if isinstance(n, Load)):
        if load.buffer not in tileable or len(load.indices) != 2:
            continue
        for position in (0, 1):
            index, other = load.indices[position], load.indices[1 - position]
            if not (isinstance(index, Var) and index.name == loop.var):
                continue
            if any(isinstance(n, Load) or (isinstance(n, Var) and n.name in changing)
                   for n in walk(other)):
                continue
            rows, columns = along_rows.is_varying(other), along_columns.is_varying(other)
            if rows != columns:  # varies along exactly one dimension
                found.append((load, BlockedRead(load.buffer, position, other, 0 if rows else 1)))
    return found


def matmul_body(function: KernelFunction, index: int, size: int,
                reads: list[tuple[Load, BlockedRead]], names: NameGenerator) -> tuple[Stmt, ...]:
    """``function``'s body with its loop at ``index`` run in blocks of
    ``size`` iterations from local tiles."""
    body = function.body
    loop: For = body[index]
    row, column, lanes = lane_lets(size, names)
    tiles: dict[BlockedRead, str] = {}
    for _, read in reads:
        tiles.setdefault(read, names.fresh(f"{read.buffer}_tile"))
    element = {load.buffer: load.type for load, _ in reads}
    block = Var(names.fresh(f"{loop.var}_block"), I64)
    fills: list[Stmt] = []
    for read, tile in tiles.items():
        lane = column if read.dim == 0 else row      # which k this instance copies
        k = block + lane
        source = (k, read.other) if read.k_position == 0 else (read.other, k)
        fills.append(If(both(k.lt(loop.stop), active((read.dim,))),
                        (Store(tile, (row, column), Load(read.buffer, source,
                                                         element[read.buffer])),)))
    step = Var(names.fresh(f"{loop.var}_step"), I64)
    by_load = {load: read for load, read in reads}

    def from_tile(node):
        read = by_load.get(node) if isinstance(node, Load) else None
        if read is None:
            return None
        cell = (row, step) if read.dim == 0 else (step, column)
        return Load(tiles[read], cell, node.type)

    inner_body = (Let(loop.var, I64, block + step), *rewrite(loop.body, from_tile))
    count = Intrinsic("min", (Const(size, I64), loop.stop - block))
    inner = For(step.name, Const(0, I64), count, 1, inner_body, unroll=loop.unroll,
                ivdep=loop.ivdep)
    blocks = For(block.name, loop.start, loop.stop, size,
                 (*fills, Barrier(), If(active(), (inner,)), Barrier()))
    declarations = tuple(ArrayDecl(tile, element[read.buffer], (size, size), "local")
                         for read, tile in tiles.items())
    tail = body[index + 1:]
    return (*lanes, *declarations, *body[:index], blocks,
            *((If(active(), tail),) if tail else ()))


# -- stencil: a group's neighbourhood of a buffer, read from a tile ---------

@dataclasses.dataclass(frozen=True)
class TileSource:
    """A local tile serving the reads of ``buffer``: the elements whose
    indices at ``positions`` (row, column) lie in the group's region
    widened by the halo, ``extents`` from (``top``, ``left``), and inside
    ``rows`` x ``columns``; the tile's leading dimensions are the read's
    other indices.  A read outside it takes ``fallback(indices)``."""

    buffer: str
    tile: str
    top: Var
    left: Var
    extents: tuple[int, int]
    rows: Expr
    columns: Expr
    element: object
    positions: tuple[int, int]
    fallback: Callable[[tuple[Expr, ...]], Expr]
    inside: Callable[[Load], bool] = lambda load: False
    """Whether a read is known to lie inside the tile (it reads the tile
    directly, without a test)."""

    def tile_indices(self, indices: tuple[Expr, ...]) -> tuple[Expr, ...]:
        row, column = (indices[p] for p in self.positions)
        others = tuple(i for p, i in enumerate(indices) if p not in self.positions)
        return (*others, row - self.top, column - self.left)


def tile_origin(halos: tuple[int, int], row: Var, column: Var, names: NameGenerator,
                prefix: str, rows: int = 1) -> tuple[Var, Var, tuple[Stmt, ...]]:
    """The tile's first row and column: the group's block (``rows``
    instances a work item down dimension 0), less the halos."""
    top, left = Var(names.fresh(f"{prefix}_top"), I64), Var(names.fresh(f"{prefix}_left"), I64)
    block_top = (InstanceId(0) - row) * rows if rows > 1 else InstanceId(0) - row
    return top, left, (Let(top.name, I64, block_top - halos[0]),
                       Let(left.name, I64, InstanceId(1) - column - halos[1]))


def fill_tile(size: int, rows: int, extents: tuple[int, int], row: Var, column: Var,
              at: Callable[[Expr, Expr], tuple[Stmt, ...]], names: NameGenerator) -> list[Stmt]:
    """``at(r, c)`` for every cell of a tile of ``extents``, by a group of
    ``size`` x ``size`` instances each ``rows`` consecutive rows of the
    tile's first ``size * rows`` x ``size`` cells: first each its own,
    then the border past them (the columns to the right, then the rows
    below, numbered row by row), ``size * size`` cells a round, the last
    round's instances past the border idle.  ``at`` should load
    unconditionally (at a clamped cell) and guard only its stores, so that
    a round's loads do not wait behind a test."""
    threads, block = size * size, size * rows
    height, width = extents
    right, below = height * (width - size), (height - block) * size
    out: list[Stmt] = [stmt for step in range(rows)
                       for stmt in at(row * rows + step if rows > 1 else row, column)]
    lane = Var(names.fresh("tile_lane"), I64)
    if right + below:
        out.append(Let(lane.name, I64, row * size + column))
    for start in range(0, right + below, threads):
        number = Var(names.fresh("tile_cell"), I64)
        beside = (Binary("div", number, Const(width - size, I64)),
                  number % (width - size) + size) if right else None
        under = (Binary("div", number - right, Const(size, I64)) + block,
                 (number - right) % size) if below else None
        if beside and under:
            first = number.lt(Const(right, I64))
            r, c = (Select(first, a, b) for a, b in zip(beside, under))
        else:
            r, c = beside or under
        out.append(Let(number.name, I64, lane + start))
        if start + threads > right + below:
            out.append(If(number.lt(Const(right + below, I64)), at(r, c)))
        else:
            out += at(r, c)
    return out


def clamped(index: Expr, count: Expr) -> Expr:
    """``index`` clamped into ``0 .. count - 1``."""
    return Intrinsic("min", (Intrinsic("max", (index, Const(0, I64))), count - 1))


def stencil_body(function: KernelFunction, buffers: list[str], size: int, halo: int,
                 names: NameGenerator, counts: tuple[Expr, ...] = ()) -> tuple[Stmt, ...]:
    """``function``'s body (a node of replication ``counts``) with every
    read of ``buffers`` served by a local tile of the group's region
    widened by ``halo``: reads known to lie inside it (instance_reach.py)
    read it directly, the others are tested and read global memory
    outside it."""
    row, column, lanes = lane_lets(size, names)
    extent = size + 2 * halo
    params = {p.name: p for p in function.params}
    top, left, origin = tile_origin((halo, halo), row, column, names, "tile")
    reach = InstanceReach(function.body, counts)
    prelude: list[Stmt] = [*lanes, *origin]
    sources = {}
    for buffer in buffers:
        element = params[buffer].type.element
        rows, columns = (size_of(d) for d in params[buffer].type.shape)
        tile = names.fresh(f"{buffer}_tile")
        prelude.append(ArrayDecl(tile, element, (extent, extent), "local", zeroed=False))
        sources[buffer] = TileSource(
            buffer, tile, top, left, (extent, extent), rows, columns, element, (0, 1),
            lambda indices, buffer=buffer, element=element: Load(buffer, indices, element),
            lambda load: reach.within(load, (0, 1), (halo, halo)))

    def copy(r: Expr, c: Expr) -> tuple[Stmt, ...]:
        cell_row, cell_col = Var(names.fresh("tile_row"), I64), Var(names.fresh("tile_col"), I64)
        out: list[Stmt] = [Let(cell_row.name, I64, r), Let(cell_col.name, I64, c)]
        for source in sources.values():
            value = Var(names.fresh(f"{source.buffer}_cell"), source.element)
            at = (clamped(top + cell_row, source.rows), clamped(left + cell_col, source.columns))
            out += [Let(value.name, source.element, Load(source.buffer, at, source.element)),
                    If(both(in_range(top + cell_row, source.rows),
                            in_range(left + cell_col, source.columns)),
                       (Store(source.tile, (cell_row, cell_col), value),))]
        return tuple(out)

    prelude += [*fill_tile(size, 1, (extent, extent), row, column, copy, names), Barrier()]
    return (*prelude, If(active(), reads_from_tiles(function.body, sources, names)))


EXPRESSIONS = {Let: ("value",), Assign: ("value",), Store: ("indices", "value"),
               AtomicUpdate: ("indices", "value"), ExprStmt: ("expr",), If: ("cond",),
               For: ("start", "stop")}
"""Per statement type, the fields whose reads run once, before the statement."""


def reads_from_tiles(body: tuple[Stmt, ...], sources: dict[str, TileSource],
                     names: NameGenerator) -> tuple[Stmt, ...]:
    """``body`` with each read of a tiled buffer evaluated just before its
    statement: from the tile when it lies inside it, else its source's
    fallback.  Reads under ``&&`` / ``||`` (maybe never evaluated) and in
    while conditions (evaluated again and again) take the fallback where
    they are; reads a source knows to be inside read the tile where they
    are."""
    def known(node):
        source = sources.get(node.buffer) if isinstance(node, Load) else None
        if source is None or not source.inside(node):
            return None
        return Load(source.tile, source.tile_indices(node.indices), source.element)

    return _hoisted_reads(rewrite(body, known), sources, names)


def _hoisted_reads(body: tuple[Stmt, ...], sources: dict[str, TileSource],
                   names: NameGenerator) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        before: list[Stmt] = []
        changes = {}
        for field in EXPRESSIONS.get(type(stmt), ()):
            value = getattr(stmt, field)
            if isinstance(value, tuple):
                changes[field] = tuple(_hoist_expr(e, sources, names, before)
                                       for e in value)
            elif value is not None:
                changes[field] = _hoist_expr(value, sources, names, before)
        stmt = dataclasses.replace(stmt, **changes) if changes else stmt
        stmt = map_blocks(stmt, lambda block: _hoisted_reads(block, sources, names))
        if isinstance(stmt, While):
            stmt = dataclasses.replace(stmt, cond=rewrite(stmt.cond,
                                                          lambda n: _fallback(n, sources)))
        out += [*before, stmt]
    return tuple(out)


def _fallback(node, sources: dict[str, TileSource]):
    if isinstance(node, Load) and node.buffer in sources:
        return sources[node.buffer].fallback(node.indices)
    return None


def _hoist_expr(expr: Expr, sources: dict[str, TileSource], names: NameGenerator,
                before: list[Stmt]) -> Expr:
    if any(isinstance(n, Binary) and n.op in ("land", "lor") for n in walk(expr)):
        # a read after && or || may never be evaluated: it stays there
        return rewrite(expr, lambda node: _fallback(node, sources))

    def visit(node):
        if not (isinstance(node, Load) and node.buffer in sources):
            return None
        source = sources[node.buffer]
        indices = tuple(Var(names.fresh(f"{node.buffer}_index"), I64) for _ in node.indices)
        r, c = (indices[p] for p in source.positions)
        value = Var(names.fresh(f"{node.buffer}_value"), source.element)
        height, width = (Const(e, I64) for e in source.extents)
        inside = both(both(in_range(r - source.top, height), in_range(c - source.left, width)),
                      both(in_range(r, source.rows), in_range(c, source.columns)))
        before.extend([*(Let(i.name, I64, e) for i, e in zip(indices, node.indices)),
                       Let(value.name, source.element, None),
                       If(inside, (Assign(value.name, Load(source.tile,
                                                           source.tile_indices(indices),
                                                           source.element)),),
                          (Assign(value.name, source.fallback(indices)),))])
        return value

    return rewrite(expr, visit)
