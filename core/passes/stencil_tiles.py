"""``stencil-fusion{form=tile}``: the producer's elements computed once per
work group into a local tile, the stencil reading them there (Halide's
``compute_at`` a GPU tile, stored in shared memory).

The fused node runs in work groups of ``size`` x ``size`` instances
(padded groups, as the tile pass's).  Every instance of a group, the
padded ones too, first runs the producer's body for cells of the group's
region widened by ``halo`` on every side, with the producer's instance
ids set to the cell and its stores of the carried buffer redirected to
the tile; after a barrier the instances inside the replication run the
consumer, each read of the carried buffer taken from the tile where it
lies inside it and recomputed (stencil-fusion's recompute form) where it
does not.  Results are bit-identical to the two nodes': each element is
the producer's value, computed by the producer's own code.

Against the recompute form, each element is computed ``(size + 2 halo)^2
/ size^2`` times instead of once per read; against the two nodes, the
carried buffer is neither written nor read back.
"""
from __future__ import annotations

import dataclasses
import math

from ..ir.graph import PADDED_GROUPS, Node
from ..ir.instance_reach import InstanceReach
from ..ir.kernel import (
    ArrayDecl, Barrier, Binary, Const, Expr, If, InstanceCount, InstanceId, Intrinsic,
    KernelFunction, Let, Load, Stmt, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.tensor_ops.lowering import in_range
from ..ir.types import I64
from ..ir.visit import rewrite, walk
from .names import NameGenerator, declared_names, substitute
from .stored_elements import StoredElements
from .tile_forms import TileSource, active, both, lane_lets, reads_from_tiles, tile_origin

MAX_LOCAL_BYTES = 32768
"""Local memory a fused node's tile may take (every OpenCL GPU has it)."""
MAX_DEFAULT_REACH = 4
"""The farthest reach the default fuses: a group of 16 x 16 then computes
at most (16 + 8)^2 / 16^2 = 2.25 times its own elements."""


@dataclasses.dataclass(frozen=True)
class Tiles:
    """Work groups of ``size`` x ``size`` instances, each computing the
    producer's elements of its region widened by ``halo`` (0: as far as
    the consumer's reads reach)."""

    size: int
    halo: int
    reach: int | None = None
    """How far the consumer's reads reach from its instance (instance_reach.py),
    once fitted to a pair; None where some read's reach is not known."""

    @property
    def extent(self) -> int:
        return self.size + 2 * self.halo

    def fitted(self, consumer: Node, function: KernelFunction, port: Parameter,
               elements: StoredElements) -> "Tiles | str":
        """These tiles for the consumer reading the carried buffer ``port``
        (the halo and reach found), or why it cannot read it from tiles."""
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
        fitted = dataclasses.replace(self, reach=reach,
                                     halo=self.halo or (reach if reach else 1))
        count = math.prod(_channel_sizes(elements))
        total = count * fitted.extent ** 2 * port.type.element.numpy_dtype.itemsize
        if total > MAX_LOCAL_BYTES:
            return (f"tile: {count} tile(s) of {fitted.extent}x{fitted.extent} take {total} "
                    f"bytes, over {MAX_LOCAL_BYTES} (give a smaller size or halo)")
        return fitted

    @property
    def worth_fusing(self) -> bool:
        """The default's choice: every read known to lie within a small
        halo of its instance (a neighbourhood)."""
        return self.reach is not None and self.reach <= min(self.halo, MAX_DEFAULT_REACH)

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
        top, left, origin = tile_origin(self.halo, row, column, names, port.name)
        positions = elements.instance_positions
        reach = InstanceReach(consumer_body, consumer_counts)
        source = TileSource(port.name, tile, top, left, counts[0], counts[1],
                            port.type.element, positions, recompute,
                            lambda load: _load_reach(reach, load, positions) is not None
                            and _load_reach(reach, load, positions) <= self.halo)

        shape = (*_channel_sizes(elements), self.extent, self.extent)
        return (*lanes, ArrayDecl(tile, port.type.element, shape, "local", zeroed=False), *origin,
                *self._fill(producer_body, buffer, tile, row, column, top, left, positions,
                            counts, names),
                Barrier(),
                If(active(), reads_from_tiles(consumer_body, {port.name: source}, self.extent,
                                              names)))

    def _fill(self, producer_body, buffer: str, tile: str, row: Var, column: Var, top: Var,
              left: Var, positions: tuple[int, ...], counts: tuple[Expr, ...],
              names: NameGenerator) -> list[Stmt]:
        """The group's instances computing the tile's cells, numbered row by
        row, ``size * size`` at a time.  Every round runs the producer's
        body unconditionally, at the cell clamped into the producer's
        instances, and only its stores are guarded (a cell past the tile or
        the image stores nothing): the rounds' loads are then all in flight
        together, where a loop under a test would wait for each round's."""
        threads, cells = self.size * self.size, self.extent * self.extent
        lane = Var(names.fresh("tile_lane"), I64)
        out: list[Stmt] = [Let(lane.name, I64, row * self.size + column)]
        for start in range(0, cells, threads):
            number = Var(names.fresh("tile_cell"), I64)
            r, c = Var(names.fresh("tile_row"), I64), Var(names.fresh("tile_col"), I64)
            at = (Var(names.fresh("cell_row"), I64), Var(names.fresh("cell_col"), I64))
            last = (lane + start).lt(Const(cells, I64)) if start + threads > cells else None
            valid = both(in_range(top + r, counts[0]), in_range(left + c, counts[1]))
            if last is not None:
                valid = both(last, valid)
            out += [Let(number.name, I64, Intrinsic("min", (lane + start, Const(cells - 1, I64)))),
                    Let(r.name, I64, Binary("div", number, Const(self.extent, I64))),
                    Let(c.name, I64, number % self.extent),
                    *(Let(a.name, I64, _clamped(origin + offset, count))
                      for a, origin, offset, count in zip(at, (top, left), (r, c), counts))]

            def visit(node, at=at, r=r, c=c, valid=valid):
                if isinstance(node, InstanceId):
                    return at[node.dim]
                if isinstance(node, InstanceCount):
                    return counts[node.dim]
                if isinstance(node, Store) and node.buffer == buffer:
                    channels = tuple(i for p, i in enumerate(node.indices) if p not in positions)
                    value = Var(names.fresh("cell_value"), node.value.type)
                    return (Let(value.name, value.type, node.value),
                            If(valid, (Store(tile, (*channels, r, c), value),)))
                return None

            fresh = {local: names.fresh(local) for local in set(declared_names(producer_body))}
            out += rewrite(substitute(producer_body, fresh), visit)
        return out


def _clamped(index: Expr, count: Expr) -> Expr:
    """``index`` clamped into ``0 .. count - 1``."""
    return Intrinsic("min", (Intrinsic("max", (index, Const(0, I64))), count - 1))


def _load_reach(reach: InstanceReach, load: Load, positions: tuple[int, ...]) -> int | None:
    """How far ``load``'s element lies from its instance (the larger of
    its row's and column's reach), or None."""
    reaches = [reach.reach(load.indices[p], dim) for dim, p in enumerate(positions)]
    return None if None in reaches else max(reaches)


def _reads_reach(function: KernelFunction, port: str, positions: tuple[int, ...],
                 counts: tuple[Expr, ...]) -> int | None:
    """How far the farthest read of ``port`` lies from its instance, or None."""
    reach = InstanceReach(function.body, counts)
    found = [_load_reach(reach, n, positions) for n in walk(function.body)
             if isinstance(n, Load) and n.buffer == port]
    return None if not found or None in found else max(found)


def _channel_sizes(elements: StoredElements) -> tuple[int, ...]:
    """The sizes of the carried buffer's channel dimensions (every channel
    is stored, so each runs from 0 to its largest key)."""
    keys = list(elements.values)
    return tuple(max(key[i] for key in keys) + 1 for i in range(len(keys[0])))
