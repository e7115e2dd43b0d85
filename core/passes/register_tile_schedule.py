"""The sizes of a ``register-tile`` schedule and the instances they make
(register_tile.py; register_tile_body.py writes the body)."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.kernel import Binary, Cast, Const, Expr
from ..ir.tensor_ops.lowering import add, maximum, minimum, mul
from ..ir.types import I64
from .register_tile_group_dim import Grouped
from .register_tile_plan import NestPlan


@dataclass(frozen=True)
class Schedule:
    """Sizes of the blocks (``chunk`` a multiple of ``rows``, ``panel`` of
    ``cols``).  With ``cores``, an instance takes fewer rows than
    ``chunk`` where the results are too few to give ``cores`` instances
    two each (never fewer than ``least`` rows), counting the instances the
    node's other dimensions make (a convolution's output rows)."""

    rows: int
    cols: int
    chunk: int
    panel: int
    kblock: int
    pack: bool = True
    cores: int = 0
    least: int = 32

    def chunk_rows(self, row_count: Expr, col_count: Expr, others: Expr) -> Expr:
        """Rows per instance, for results of ``row_count`` x ``col_count``
        in each of ``others`` instances of the other dimensions."""
        if not self.cores:
            return i64(self.chunk)
        blocks = mul(mul(ceil_div(row_count, self.rows), ceil_div(col_count, self.panel)),
                     others)
        most, least = self.chunk // self.rows, max(1, self.least // self.rows)
        share = ceil_div(blocks, 2 * self.cores)
        return mul(maximum(i64(min(least, most)), minimum(i64(most), share)), i64(self.rows))


def group_size(plan: NestPlan, s: Schedule, replication: tuple[Expr, ...], dim: int,
               chunk: Expr) -> Expr:
    """Values of dimension ``dim`` per instance (register_tile_group_dim.py):
    as many as the array of accumulators holds beside a chunk's results
    (``s.chunk`` x ``s.panel`` values), fewer where the instances would
    leave ``s.cores`` short."""
    columns = minimum(as_index(replication[plan.cols]), i64(s.panel))
    rows_used = minimum(chunk, mul(ceil_div(as_index(replication[plan.rows]), s.rows),
                                   i64(s.rows)))
    used = mul(rows_used, mul(ceil_div(columns, s.cols), i64(s.cols)))
    size = minimum(Binary("div", i64(s.chunk * s.panel), used), as_index(replication[dim]))
    if s.cores:
        instances = _product(block_counts(plan, s, replication, chunk))
        size = minimum(size, Binary("div", instances, i64(2 * s.cores)))
    return maximum(i64(1), size)


def i64(value: int) -> Const:
    return Const(value, I64)


def ceil_div(value: Expr, by: int | Expr) -> Expr:
    less = i64(by - 1) if isinstance(by, int) else by - i64(1)
    return Binary("div", add(as_index(value), less), i64(by) if isinstance(by, int) else by)


def tiled_replication(grouped: Grouped, s: Schedule, replication: tuple[Expr, ...]) -> Expr:
    """The instances of a node of ``replication`` scheduled by ``s``, in one
    dimension (a runtime that splits the first dimension over the cores
    then finds every block there)."""
    plan, dim = grouped
    chunk = s.chunk_rows(replication[plan.rows], replication[plan.cols],
                         other_instances(plan, replication))
    group = None if dim is None else group_size(plan, s, replication, dim, chunk)
    return _product(block_counts(plan, s, replication, chunk, dim, group))


def other_instances(plan: NestPlan, replication: tuple[Expr, ...]) -> Expr:
    """Instances along the dimensions other than the rows and columns."""
    return _product(as_index(size) for dim, size in enumerate(replication)
                    if dim not in (plan.rows, plan.cols))


def _product(sizes) -> Expr:
    total = i64(1)
    for size in sizes:
        total = mul(total, size)
    return total


def block_counts(plan: NestPlan, s: Schedule, replication, chunk: Expr,
                 group_dim: int | None = None, group: Expr | None = None) -> list:
    """Instances along each dimension of ``replication``."""
    counts = [as_index(size) for size in replication]
    counts[plan.rows] = ceil_div(counts[plan.rows], chunk)
    counts[plan.cols] = ceil_div(counts[plan.cols], s.panel)
    if group_dim is not None:
        counts[group_dim] = ceil_div(counts[group_dim], group)
    return counts


def as_index(expr: Expr) -> Expr:
    """``expr`` as an i64 index (a replication size may be an i32 scalar)."""
    return expr if expr.type == I64 else Cast(expr, I64)
