"""The replication loop nest of a node entry: dimension 0 from ``begin``
to ``end`` (one thread's chunk), the inner dimensions in full, the body
inside; with lane strips (lanes.py), blocks of adjacent instances first
and one instance at a time for the rest.

With ``lanes`` L and ``rows`` R on a rank >= 2 node, the two innermost
dimensions run as::

    for i0 in full blocks of R rows:
        for j0 in full strips of L: block body (R x L instances)
        for r in 0..R: for j in the rest: body (i0 + r, j)
    for i in the remaining rows:
        for j0 in full strips of L: strip body (L instances)
        for j in the rest: body (i, j)

Without row blocks, a kernel that clamps the innermost instance id
(borders.py) runs its own body only at the borders; between them, the
body without those clamps, in strips where it has them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from llvmlite import ir

from hpvm.ir.kernel import KernelFunction, Stmt
from hpvm.ir.uniformity import Uniformity

from .borders import Partition, partition
from .lanes import repeats_uniform_work, strip_body
from .loop_lanes import strip_width
from .llvm_types import i64
from .loop_metadata import access_group, loop_id
from .state import BufferView


@dataclass(frozen=True)
class Strips:
    """Bodies for blocks of instances: ``strip`` runs ``lanes`` instances
    of the innermost dimension, ``block`` ``rows`` x ``lanes`` of the two
    innermost (None: not used); ``borders`` the innermost dimension's
    partition at clamped borders and ``steady_strip`` the strip of its
    steady body (None: not used); ``vectorize`` False keeps LLVM from
    vectorising the loop of single instances (lanes.repeats_uniform_work);
    ``wide`` the strip of ``wide_lanes`` instances, where strips walk down
    columns."""

    lanes: int
    strip: tuple[Stmt, ...] | None = None
    rows: int = 1
    block: tuple[Stmt, ...] | None = None
    borders: Partition | None = None
    steady_strip: tuple[Stmt, ...] | None = None
    vectorize: bool | None = None
    wide_lanes: int = 0
    wide: tuple[Stmt, ...] | None = None
    """Strips of ``wide_lanes`` instances run before those of ``lanes``
    (loop_lanes.strip_width; None: not used)."""


def plan_strips(kernel: KernelFunction, rank: int, lanes: int, rows: int) -> Strips:
    """The strip bodies worth using for ``kernel`` replicated in ``rank``
    dimensions (none when lanes.strip_body declines)."""
    inner = rank - 1
    vectorize = False if repeats_uniform_work(kernel, inner) else None
    strip = strip_body(kernel, {inner: lanes}) if lanes > 1 else None
    if strip is not None and rank >= 2 and rows >= 2:
        return Strips(lanes, strip, rows, strip_body(kernel, {inner - 1: rows, inner: lanes}),
                      vectorize=vectorize)
    borders = partition(kernel, inner)
    if borders is None:
        wide_lanes = strip_width(kernel, Uniformity(kernel, (inner,)), inner, lanes) \
            if strip is not None else lanes
        wide = strip_body(kernel, {inner: wide_lanes}) if wide_lanes > lanes else None
        return Strips(lanes, strip, vectorize=vectorize, wide_lanes=wide_lanes, wide=wide)
    steady = dataclasses.replace(kernel, body=borders.body)
    steady_strip = strip_body(steady, {inner: lanes}) if lanes > 1 else None
    return Strips(lanes, strip, borders=borders, steady_strip=steady_strip, vectorize=vectorize)


def replication_loops(lowering, body: tuple[Stmt, ...], begin, end, strips: Strips,
                      views, scratch, dim: int = 0) -> None:
    """Emit the loops over dimension ``dim`` (from ``begin`` to ``end``) and
    the dimensions inside it, running ``body`` once per instance."""
    rank = len(lowering.instance_counts)
    if dim == rank - 1 and strips.borders is not None:
        _partitioned(lowering, body, begin, end, strips, views, scratch)
        return
    if dim == rank - 1:
        if strips.wide is not None:
            begin = _strips(lowering, begin, end, strips.wide, strips.wide_lanes, views, scratch)
        _innermost(lowering, body, begin, end, strips.strip, strips.lanes, views, scratch,
                   vectorize=strips.vectorize)
        return

    def row(index: ir.Value, _next: ir.Block) -> None:
        lowering.instance_ids.append(index)
        count = lowering.instance_counts[dim + 1]
        replication_loops(lowering, body, i64(0), count, strips, views, scratch, dim + 1)
        lowering.instance_ids.pop()

    if dim == rank - 2 and strips.block is not None:
        rows = strips.rows

        def block_row(index: ir.Value, _next: ir.Block) -> None:
            lowering.instance_ids.append(index)
            count = lowering.instance_counts[dim + 1]
            _innermost(lowering, body, i64(0), count, strips.block, strips.lanes, views, scratch,
                       rows, strips.vectorize)
            lowering.instance_ids.pop()

        blocks_end = _full_multiple_end(lowering.builder, begin, end, rows)
        lowering.counted_loop(f"rows{dim}", begin, lambda: blocks_end, rows, block_row)
        begin = blocks_end
    lowering.counted_loop(f"instance{dim}", begin, lambda: end, 1, row)


def _partitioned(lowering, body, begin, end, strips: Strips, views, scratch) -> None:
    """The innermost dimension from ``begin`` to ``end`` in three parts:
    the kernel's body before the steady range, the steady body in it, the
    kernel's body after it."""
    builder = lowering.builder

    def bounded(limits, low, high, pick: str) -> ir.Value:
        """The tightest of ``limits`` (``pick``: the largest lower or the
        smallest upper bound), kept within [low, high]."""
        value = low if pick == ">" else high
        for limit in limits:
            limit = lowering.index(limit)
            value = builder.select(builder.icmp_signed(pick, limit, value), limit, value)
        value = builder.select(builder.icmp_signed("<", value, low), low, value)
        return builder.select(builder.icmp_signed(">", value, high), high, value)

    first = bounded(strips.borders.lower, begin, end, ">")
    stop = bounded(strips.borders.upper, first, end, "<")
    dim = len(lowering.instance_counts) - 1
    # The borders are a few instances: not worth LLVM's vectorised copies.
    _instance_loop(lowering, f"border{dim}", begin, first, 1, body, views, scratch, False)
    _innermost(lowering, strips.borders.body, first, stop, strips.steady_strip, strips.lanes,
               views, scratch, vectorize=strips.vectorize)
    _instance_loop(lowering, f"border_end{dim}", stop, end, 1, body, views, scratch, False)


def _full_multiple_end(builder: ir.IRBuilder, begin, end, step: int) -> ir.Value:
    """``begin`` plus the largest multiple of ``step`` not past ``end``."""
    full = builder.mul(builder.sdiv(builder.sub(end, begin), i64(step)), i64(step))
    return builder.add(begin, full)


def _innermost(lowering, body, begin, end, strip, lanes: int, views, scratch,
               rows: int = 1, vectorize: bool | None = None) -> None:
    """The innermost dimension: strips of ``lanes`` instances (when
    ``strip`` is given) up to the last full one, then single instances
    (``vectorize``: as _instance_loop's); with ``rows`` > 1 the single
    instances run for each of ``rows`` rows from the current id of the
    dimension outside."""
    dim = len(lowering.instance_counts) - 1
    if strip is not None:
        begin = _strips(lowering, begin, end, strip, lanes, views, scratch)
    if rows == 1:
        _instance_loop(lowering, f"instance{dim}", begin, end, 1, body, views, scratch,
                       vectorize)
        return
    first_row = lowering.instance_ids.pop()

    def row(index: ir.Value, _next: ir.Block) -> None:
        lowering.instance_ids.append(lowering.builder.add(first_row, index))
        _instance_loop(lowering, f"instance{dim}", begin, end, 1, body, views, scratch,
                       vectorize)
        lowering.instance_ids.pop()

    lowering.counted_loop(f"rest_row{dim - 1}", i64(0), lambda: i64(rows), 1, row)
    lowering.instance_ids.append(first_row)


def _strips(lowering, begin, end, strip, lanes: int, views, scratch) -> ir.Value:
    """Strips of ``lanes`` instances from ``begin`` up to the last full
    one; where they end."""
    dim = len(lowering.instance_counts) - 1
    strips_end = _full_multiple_end(lowering.builder, begin, end, lanes)
    _instance_loop(lowering, f"strip{dim}_{lanes}", begin, strips_end, lanes, strip, views,
                   scratch)
    return strips_end


def _instance_loop(lowering, name, begin, end, step, statements, views, scratch,
                   vectorize: bool | None = None) -> None:
    """``for id in [begin, end) step step``: ``statements`` with
    InstanceId of the innermost dimension reading ``id``; ``vectorize``
    False keeps LLVM from vectorising the loop."""
    group = access_group(lowering.module)

    def body(index: ir.Value, next_instance: ir.Block) -> None:
        lowering.instance_ids.append(index)
        lowering.instance_group = group
        lowering.return_block = next_instance
        lowering.push_scope()
        _copy_private_buffers(lowering, views, scratch)
        lowering.statements(statements)
        lowering.pop_scope()
        lowering.instance_ids.pop()

    lowering.counted_loop(name, begin, lambda: end, step, body,
                          loop_id(lowering.module, parallel_group=group, vectorize=vectorize))


def _copy_private_buffers(lowering, views, scratch) -> None:
    """Give this instance its own copy of each written private buffer."""
    for name, area in scratch.items():
        view = views[name]
        lowering.copy_bytes(area, view.pointer, lowering.byte_count(view))
        lowering.bind(name, BufferView(view.element, area, view.dims, parallel=False))
