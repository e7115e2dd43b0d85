"""Row tiles: a strip's reads that run along a loop, copied a tile at a time.

A strip (lanes.py) runs adjacent instances in vector lanes.  Where each
instance walks its own row along a loop (``acc += a[i, k]``: row sums, a
matrix-vector product, per-row statistics written as loops), one step of
the loop reads one element of every lane's row, a row's length apart: the
lane loop gathers them one by one (about 34 cycles a step of 16 lanes).
The order of each lane's chain is the program's, so the loop cannot be
vectorised along itself.  Instead, for every TILE steps, each lane's TILE
consecutive elements are copied into a private tile (contiguous vector
loads), and the steps then read the tile across the lanes: LLVM turns
the pair into a transpose in registers, and every chain keeps its order::

    for k { for l [ivdep] { acc[l] = acc[l] + a[i + l, k] } }
      ->
    for each chunk of TILE lanes l0 {
      for kb in 0 .. count / TILE (none under LEAST_STEPS steps) {
        private t: f32[TILE, TILE]
        for l in l0 .. l0 + TILE { for k in k0 .. k0 + TILE { t[l - l0, k - k0] = a[i + l, k] } }
        for k in k0 .. k0 + TILE { for l in l0 .. l0 + TILE [ivdep] {
          acc[l] = acc[l] + t[l - l0, k - k0] } }
      }
      for k in (the remaining steps) { the loop's body for lanes l0 .. l0 + TILE }
    }

The k loop's body is lane loops only and lanes are independent instances,
so a strip of 16 lanes runs as two chunks of 8.  Row sums of a 4096^2 f32
matrix on 2 Zen 3 cores: 5.8 -> 1.7 ms, bit for bit the same sums; a
matrix-vector product 6.0 -> 1.8 ms; MachSuite's ELLPACK product (rows of
10, untiled but chunked) 0.75x its time.  A loop qualifies when it has
unit step, bounds its body cannot change, a body of lane loops only, and
a read of a buffer the kernel does not write whose element moves by one
along the loop and not by one across the lanes, its indices computed
from names set outside the loop.
"""
from __future__ import annotations

import dataclasses

from hpvm.ir.analysis import assigned_variables, bound_dependences, writes_buffer
from hpvm.ir.kernel import (
    ArrayDecl, Binary, Compare, Const, For, Let, Load, Select, Stmt, Store, Var,
)
from hpvm.ir.strides import IndexStrides, loop_variable
from hpvm.ir.types import I64
from hpvm.ir.visit import rewrite, walk

TILE = 8
"""Steps of the loop a tile holds, and lanes a tile holds: an 8 x 8 f32
tile is eight AVX2 registers.  16 x 8 and 16 x 16 tiles ran 3-4x slower
than 8 x 8 on Zen 3 (spilled), so strips of 16 lanes run two 8 x 8
tiles."""
LEAST_STEPS = 4 * TILE
"""Loops of fewer steps run as they were: MachSuite's ELLPACK rows (10
steps) ran 1.3x slower tiled."""


def tile_row_reads(body: tuple[Stmt, ...], kernel_body: tuple[Stmt, ...],
                   counters: tuple[Var, ...], shape: tuple[int, ...],
                   fresh) -> tuple[Stmt, ...]:
    """``body`` (a strip's, lane loops over ``counters`` of ``shape``)
    with each qualifying loop's row reads tiled (module text); ``fresh(hint)``
    gives names no one uses.  Strips of rows and lanes are left as they
    are, and so are strips whose lanes are not a multiple of TILE."""
    if len(counters) != 1 or shape[0] % TILE:
        return body
    strides = IndexStrides(kernel_body)
    lane = counters[0]

    def visit(node):
        if not isinstance(node, For) or node.var == lane.name:
            return None
        reads = _row_reads(node, kernel_body + body, strides, lane)
        return _tiled(node, reads, lane, shape[0], fresh) if reads else None
    return _rewrite_uniform(body, visit, lane.name)


def _rewrite_uniform(body: tuple[Stmt, ...], visit, lane: str) -> tuple[Stmt, ...]:
    """``body`` with ``visit`` applied to the loops outside lane loops."""
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, For) and stmt.var != lane:
            inner = dataclasses.replace(stmt, body=_rewrite_uniform(stmt.body, visit, lane))
            replaced = visit(inner)
            out.extend(replaced if isinstance(replaced, tuple) else (replaced or inner,))
        else:
            out.append(stmt)
    return tuple(out)


def _row_reads(loop: For, bodies, strides: IndexStrides, lane: Var) -> list[Load]:
    """The reads of ``loop`` to tile (module text), or [] where it does
    not qualify."""
    if loop.step != 1 or loop.reduce or any(bound_dependences(loop, (loop.body,))) \
            or loop.start.type != I64 or loop.stop.type != I64 \
            or not loop.body or not all(isinstance(s, For) and s.var == lane.name
                                        for s in loop.body):
        return []
    inside = assigned_variables(loop.body) | {s.name for s in walk(loop.body)
                                              if isinstance(s, Let)} \
        | {s.var for s in walk(loop.body) if isinstance(s, For) and s.var != lane.name}
    along = loop_variable(loop.var)
    found: dict[Load, None] = {}
    for node in walk(loop.body):
        if not isinstance(node, Load) or node in found or writes_buffer(bodies, node.buffer):
            continue
        if any(isinstance(v, Var) and v.name in inside or isinstance(v, Load)
               for v in walk(node.indices)):
            continue  # computed in the loop, or read from memory: read where it is
        if strides.element_stride(node.indices, along) != 1:
            continue
        if strides.element_stride(node.indices, loop_variable(lane.name)) in (0, 1):
            continue  # adjacent or the same across the lanes: vectorised as it is
        found[node] = None
    return list(found)


def _tiled(loop: For, reads: list[Load], lane: Var, lanes: int, fresh) -> tuple[Stmt, ...]:
    """``loop`` with ``reads`` tiled, TILE lanes at a time."""
    chunk, step = Var(fresh("lane_chunk"), I64), Var(fresh("tile_step"), I64)
    first_lane, first = Var(fresh("first_lane"), I64), Var(fresh("tile_first"), I64)
    tiles = Var(fresh("tiles"), I64)
    k = Var(loop.var, I64)
    at = (Binary("sub", lane, first_lane), Binary("sub", k, first))
    names = {read: fresh("row_tile") for read in reads}

    def tile_loop(var: str, start, body) -> For:
        return For(var, start, Binary("add", start, Const(TILE, I64)), 1, body, unroll=TILE,
                   trip_count=TILE)

    def chunked(node):
        if isinstance(node, For) and node.var == lane.name:
            return dataclasses.replace(tile_loop(lane.name, first_lane, node.body),
                                       ivdep=node.ivdep)
        return None

    def from_tile(node):
        if isinstance(node, Load) and node in names:
            return Load(names[node], at, node.type)
        return chunked(node)
    copies: list[Stmt] = []
    for read, name in names.items():
        copies += [ArrayDecl(name, read.type, (TILE, TILE), "private", zeroed=False),
                   tile_loop(lane.name, first_lane, (tile_loop(loop.var, first, (
                       Store(name, at, read),)),))]
    whole = For(step.name, Const(0, I64), tiles, 1, (
        Let(first.name, I64, Binary("add", loop.start, Binary("mul", step, Const(TILE, I64)))),
        *copies, tile_loop(loop.var, first, rewrite(loop.body, from_tile))))
    rest = dataclasses.replace(loop, start=Binary("add", loop.start,
                                                  Binary("mul", tiles, Const(TILE, I64))),
                               body=rewrite(loop.body, chunked))
    count = Binary("sub", loop.stop, loop.start)
    return (Let(tiles.name, I64, Select(Compare("ge", count, Const(LEAST_STEPS, I64)),
                                        Binary("div", count, Const(TILE, I64)), Const(0, I64))),
            For(chunk.name, Const(0, I64), Const(lanes // TILE, I64), 1, (
                Let(first_lane.name, I64, Binary("mul", chunk, Const(TILE, I64))),
                whole, rest), trip_count=lanes // TILE))
