"""``stencil-fusion{form=tile}``: the producer's elements computed once per
work group into a local tile, the stencil reading them there (Halide's
``compute_at`` a GPU tile, stored in shared memory).

The fused node runs in work groups of ``size`` x ``size`` work items
(padded groups, as the tile pass's), each computing ``rows`` consecutive
instances along dimension 0, so a group's block is ``size * rows`` x
``size`` instances.  Every work item of a group, the padded ones too,
first runs the producer's body for cells of the block widened by the
halos (along each dimension as far as the consumer's reads reach, found
by instance_reach.py), with the producer's instance ids set to the cell
and its stores of the carried buffer redirected to the tile: its own
cells first, then the border, spread over the group's first work items.
It runs the body at the cell clamped into the producer's instances and
guards only the stores, so that a round's loads do not wait behind a
test.  After a barrier, each work item runs the consumer for its rows
inside the replication, each read of the carried buffer taken from the
tile where it is known to lie inside it, tested against the tile where
its reach is not known, and recomputed (the recompute form) where it
falls outside.  Results are bit-identical to the two nodes': each
element is the producer's value, computed by the producer's own code.

Against the recompute form, each element is computed ``(size * rows + 2
halo) (size + 2 halo) / (size^2 rows)`` times instead of once per read;
against the two nodes, the carried buffer is neither written nor read
back.  On an H200, blur's pair (3 x 1 then 1 x 3) took 0.024 ms in
groups of 16 x 16, two rows each, against 0.033 as two nodes and 0.027
recomputed; camera's demosaic and the rest 0.064 against 0.071.
"""
from __future__ import annotations

import dataclasses
import math

from ..ir.graph import PADDED_GROUPS, Node
from ..ir.instance_reach import InstanceReach
from ..ir.kernel import (
    ArrayDecl, Barrier, Expr, If, InstanceCount, InstanceId, KernelFunction, Let, Load, Stmt,
    Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.tensor_ops.lowering import in_range
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .names import NameGenerator, fresh_copy
from .register_tile_schedule import as_index, ceil_div
from .stored_elements import StoredElements
from .tile_forms import (
    TileSource, active, both, clamped, fill_tile, lane_lets, reads_from_tiles, tile_origin,
)

MAX_LOCAL_BYTES = 32768
"""Local memory a fused node's tile may take (every OpenCL GPU has it)."""
MAX_DEFAULT_REACH = 4
"""The farthest reach the default fuses: a group of 16 x 16 then computes
at most (16 + 8)^2 / 16^2 = 2.25 times its own elements."""


@dataclasses.dataclass(frozen=True)
class Tiles:
    """Work groups of ``size`` x ``size`` instances, each computing the
    producer's elements of its region widened by ``halo`` (0: along each
    dimension as far as the consumer's reads reach)."""

    size: int
    halo: int
    rows: int = 1
    """Consecutive instances each work item computes along dimension 0: a
    group's block is ``size * rows`` x ``size``."""
    reach: tuple[int, int] | None = None
    """How far the consumer's reads reach from its instance along each
    dimension (instance_reach.py), once fitted to a pair; None where some
    read's reach is not known."""
    halos: tuple[int, int] = (1, 1)
    """The tile's widening along each dimension, once fitted."""

    @property
    def extents(self) -> tuple[int, int]:
        return self.size * self.rows + 2 * self.halos[0], self.size + 2 * self.halos[1]

    def replication(self, replication: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """The fused node's: one instance per ``rows`` of the consumer's."""
        if self.rows == 1:
            return replication
        return (ceil_div(replication[0], self.rows), *replication[1:])

    def fitted(self, consumer: Node, function: KernelFunction, port: Parameter,
               elements: StoredElements) -> "Tiles | str":
        """These tiles for the consumer reading the carried buffer ``port``
        (the halos and reach found), or why it cannot read it from tiles."""
        if len(consumer.replication) != 2 or len(elements.instance_positions) != 2:
            return (f"tile: '{consumer.name}' and its producer must each have two replication "
                    "dimensions (an image)")
        if "group" in consumer.attributes:
            return f"tile: '{consumer.name}' has a work-group size already (attribute 'group')"
        if any(isinstance(n, Barrier) or isinstance(n, ArrayDecl) and n.space == "local"
               for n in walk(function.body)):
            return f"tile: '{consumer.name}' already synchronises its work group"
        reach = _reads_reach(function, port.name, elements.instance_positions,
                             tuple(consumer.replication))
        halos = (self.halo, self.halo) if self.halo else reach or (1, 1)
        fitted = dataclasses.replace(self, reach=reach, halos=halos)
        count = math.prod(_channel_sizes(elements))
        height, width = fitted.extents
        total = count * height * width * port.type.element.numpy_dtype.itemsize
        if total > MAX_LOCAL_BYTES:
            return (f"tile: {count} tile(s) of {height}x{width} take {total} bytes, over "
                    f"{MAX_LOCAL_BYTES} (give a smaller size or halo)")
        return fitted

    @property
    def worth_fusing(self) -> bool:
        """The default's choice: every read known to lie within a small
        halo of its instance (a neighbourhood)."""
        return self.reach is not None and all(
            r <= min(h, MAX_DEFAULT_REACH) for r, h in zip(self.reach, self.halos))

    def attributes(self) -> dict:
        return {"group": (self.size, self.size), PADDED_GROUPS: True}

    def body(self, consumer_body: tuple[Stmt, ...], producer_body: tuple[Stmt, ...],
             buffer: str, port: Parameter, elements: StoredElements,
             counts: tuple[Expr, ...], consumer_counts: tuple[Expr, ...], recompute,
             names: NameGenerator) -> tuple[Stmt, ...]:
        """The fused body: ``producer_body`` (renamed into the consumer's
        names; it stores ``buffer``) filling the group's tile, then
        ``consumer_body`` reading ``port`` from it."""
        row, column, lanes = lane_lets(self.size, names)
        tile = names.fresh(f"{port.name}_tile")
        top, left, origin = tile_origin(self.halos, row, column, names, port.name, self.rows)
        positions = elements.instance_positions
        reach = InstanceReach(consumer_body, consumer_counts)
        source = TileSource(port.name, tile, top, left, self.extents, counts[0], counts[1],
                            port.type.element, positions, recompute,
                            lambda load: reach.within(load, positions, self.halos))
        shape = (*_channel_sizes(elements), *self.extents)
        cell = _Cell(producer_body, buffer, tile, top, left, positions, counts, names)
        consumer = reads_from_tiles(consumer_body, {port.name: source}, names)
        return (*lanes, ArrayDecl(tile, port.type.element, shape, "local", zeroed=False), *origin,
                *fill_tile(self.size, self.rows, self.extents, row, column, cell.at, names),
                Barrier(),
                *self._instances(consumer, top + self.halos[0] + row * self.rows,
                                 consumer_counts[0], names))

    def _instances(self, body: tuple[Stmt, ...], first: Expr, count: Expr,
                   names: NameGenerator) -> tuple[Stmt, ...]:
        """``body`` for each of the work item's instances (rows ``first``,
        ``first + 1`` ... when it has several), those inside the
        replication (``count`` rows)."""
        if self.rows == 1:
            return (If(active(), body),)
        out = []
        for step in range(self.rows):
            row = Var(names.fresh("instance_row"), I64)

            def placed(node, row=row):
                if isinstance(node, InstanceId) and node.dim == 0:
                    return row
                if isinstance(node, InstanceCount) and node.dim == 0:
                    return as_index(count)
                return None

            out += [Let(row.name, I64, first + step if step else first),
                    If(both(row.lt(as_index(count)), active((1,))),
                       rewrite(fresh_copy(body, names), placed))]
        return tuple(out)


@dataclasses.dataclass
class _Cell:
    """The producer's body run for one cell of the tile."""

    producer_body: tuple[Stmt, ...]
    buffer: str
    tile: str
    top: Var
    left: Var
    positions: tuple[int, ...]
    counts: tuple[Expr, ...]
    names: NameGenerator

    def at(self, r: Expr, c: Expr) -> tuple[Stmt, ...]:
        """The producer's body at tile cell (``r``, ``c``): run at the cell
        clamped into the producer's instances, its stores made only where
        the cell lies inside them (the image)."""
        names = self.names
        tile_row, tile_col = Var(names.fresh("tile_row"), I64), Var(names.fresh("tile_col"), I64)
        at = (Var(names.fresh("cell_row"), I64), Var(names.fresh("cell_col"), I64))
        valid = both(in_range(self.top + tile_row, self.counts[0]),
                     in_range(self.left + tile_col, self.counts[1]))

        def visit(node):
            if isinstance(node, InstanceId):
                return at[node.dim]
            if isinstance(node, InstanceCount):
                return self.counts[node.dim]
            if isinstance(node, Store) and node.buffer == self.buffer:
                channels = tuple(i for p, i in enumerate(node.indices)
                                 if p not in self.positions)
                value = Var(names.fresh("cell_value"), node.value.type)
                return (Let(value.name, value.type, node.value),
                        If(valid, (Store(self.tile, (*channels, tile_row, tile_col), value),)))
            return None

        return (Let(tile_row.name, I64, r), Let(tile_col.name, I64, c),
                *(Let(a.name, I64, clamped(origin + offset, count))
                  for a, origin, offset, count in zip(at, (self.top, self.left),
                                                      (tile_row, tile_col), self.counts)),
                *rewrite(fresh_copy(self.producer_body, names), visit))


def _reads_reach(function: KernelFunction, port: str, positions: tuple[int, ...],
                 counts: tuple[Expr, ...]) -> tuple[int, ...] | None:
    """How far the farthest read of ``port`` lies from its instance along
    each dimension, or None."""
    reach = InstanceReach(function.body, counts)
    found = [reach.of_load(n, positions) for n in walk(function.body)
             if isinstance(n, Load) and n.buffer == port]
    if not found or None in found:
        return None
    return tuple(max(each) for each in zip(*found))


def _channel_sizes(elements: StoredElements) -> tuple[int, ...]:
    """The sizes of the carried buffer's channel dimensions (every channel
    is stored, so each runs from 0 to its largest key)."""
    keys = list(elements.values)
    return tuple(max(key[i] for key in keys) + 1 for i in range(len(keys[0])))
