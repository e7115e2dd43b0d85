"""Helpers for the reference lowerings of tensor ops into kernel IR.

A :class:`KernelBuilder` collects the statements of one kernel.  Blocks are
Python ``with`` statements, so a lowering reads like the loop nest it emits::

    i, (n, k) = b.instance_indices(b.dims("y"))
    acc = b.let("acc", b.zero())
    with b.loop("c", b.dim("w", 1)) as c:
        b.assign(acc, acc + b.load("x", n, c) * b.load("w", k, c))
    b.store("y", (n, k), acc)

Sizes are i64 expressions: ``Const`` for fixed dims, ``Var(symbol, I64)``
for shape symbols, which mean the same inside the kernel and in the node's
scope, so one expression serves both as an index bound and as replication.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Iterator, Mapping

import numpy as np

from ..kernel import (
    Assign, Binary, Const, Expr, For, If, InstanceId, Intrinsic, Let, Load, Reduction, Stmt,
    Store, Var,
)
from ..graph import MAX_REPLICATION_DIMS
from ..parameter import Parameter
from ..types import I64, BufferType, Dim, ScalarType
from .context import OpContext


def size(dim: Dim) -> Expr:
    """A dim as an i64 expression."""
    return Var(dim, I64) if isinstance(dim, str) else Const(dim, I64)


def const_value(expr: Expr) -> int | None:
    return expr.value if isinstance(expr, Const) else None


def mul(a: Expr, b: Expr) -> Expr:
    """``a * b`` with constants folded (i64 index math)."""
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None:
        return Const(ca * cb, a.type)
    if ca == 1 or cb == 0:
        return b
    if cb == 1 or ca == 0:
        return a
    return a * b


def add(a: Expr, b: Expr) -> Expr:
    """``a + b`` with constants folded."""
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None:
        return Const(ca + cb, a.type)
    if ca == 0:
        return b
    if cb == 0:
        return a
    if cb is not None and cb < 0:
        return a - Const(-cb, b.type)
    return a + b


def div(a: Expr, b: Expr) -> Expr:
    """``a / b`` (integer, truncating) with division by 1 folded."""
    return a if const_value(b) == 1 else a / b


def product(exprs) -> Expr:
    result: Expr = Const(1, I64)
    for e in exprs:
        result = mul(result, e)
    return result


def flat_index(indices, dims) -> Expr:
    """Row-major flat index of ``indices`` in an array of ``dims``."""
    flat: Expr = Const(0, I64)
    for index, dim in zip(indices, dims):
        flat = add(mul(flat, dim), index)
    return flat


def broadcast_indices(dims: list[Expr], indices: list[Expr]) -> list[Expr]:
    """The indices into an array of ``dims`` at ``indices`` of a result it
    broadcasts to (numpy: dims aligned on the right, a size-1 dim reads 0)."""
    shift = len(indices) - len(dims)
    return [Const(0, I64) if const_value(dim) == 1 else indices[shift + axis]
            for axis, dim in enumerate(dims)]


def in_range(index: Expr, stop: Expr) -> Expr:
    """``0 <= index < stop`` (short-circuit)."""
    return Binary("land", index.ge(Const(0, I64)), index.lt(stop))


def maximum(a: Expr, b: Expr) -> Expr:
    return Intrinsic("max", (a, b))


def minimum(a: Expr, b: Expr) -> Expr:
    return Intrinsic("min", (a, b))


def padded_shape(shape: tuple[Dim, ...], widths) -> tuple[Dim, ...]:
    """``shape`` with (leading, trailing) ``widths`` added to each axis
    (an axis without padding keeps its size, a symbol too)."""
    return tuple(dim + lead + trail if lead or trail else dim
                 for dim, (lead, trail) in zip(shape, widths))


@dataclass(frozen=True)
class RegisterTiles:
    """How the register-tiled lowerings (tiled.py) block their results,
    chosen by the target for its registers.  A conv or gemm tile is
    ``rows`` results deep (output channels, rows of ``y``) and ``cols``
    wide; the default suits targets that run one instance per thread.
    ``vectors``: widths are made for a vector unit: a row's remainder is
    split into power-of-two tiles and the column loop unrolled, so that
    each tile row is whole vectors held in registers.  ``registers``:
    the vector registers there are (packed products, packed_products.py,
    take tiles of twice the columns where there are 32).  ``cores``: the
    instances that run at once, which the lowerings give work enough."""

    cols: int = 8
    rows: int = 4
    vectors: bool = False
    registers: int = 16
    cores: int = 16


class KernelBuilder:
    """Builds the body of a lowered op kernel over the node's ``params``,
    register-tiled as ``tiles`` says.  ``constants``: the arrays constant
    nodes feed into input ports, where the caller can hand a port a
    rearranged copy of its constant (``relayout``)."""

    def __init__(self, ctx: OpContext, params: tuple[Parameter, ...],
                 tiles: RegisterTiles = RegisterTiles(),
                 constants: Mapping[str, np.ndarray] | None = None,
                 pads_inputs: bool = False, channels_last: frozenset[str] = frozenset()):
        self.ctx = ctx
        self.tiles = tiles
        self.types: dict[str, BufferType] = {p.name: p.type for p in params}
        self._params = params
        self.constants = dict(constants or {})
        self.relaid: dict[str, np.ndarray] = {}
        """Input port -> the array the kernel reads there instead of the
        port's constant (relayout)."""
        self.pads_inputs = pads_inputs
        """Whether the caller can pad an input before the kernel runs
        (read_padded)."""
        self.padded: dict[str, tuple[int, ...]] = {}
        """Input port -> the ``pads`` (pad.py) of the zero-padded copy the
        kernel reads there (read_padded)."""
        self.channels_last = frozenset(channels_last)
        """Ports whose NCHW activations the caller stores channels-last,
        where the lowering can (stored_channels_last)."""
        self.honoured: set[str] = set()
        """The ports of ``channels_last`` the kernel reads or writes so."""
        self._taken = {p.name for p in params}
        for t in self.types.values():
            self._taken.update(t.symbols)
        self._blocks: list[list[Stmt]] = [[]]

    def finish(self) -> tuple[Stmt, ...]:
        assert len(self._blocks) == 1, "unclosed block"
        return tuple(self._blocks[0])

    def params(self) -> tuple[Parameter, ...]:
        """The kernel's parameters: the node's, relaid ports with the
        types of their new arrays; inputs ``restrict``: a tensor op's
        results are new values, never in an input's buffer, so back ends
        may move the loads of an input past the stores of a result (an
        epilogue's loads of a residual summand, ``z``, between the stores
        of a tile kept LLVM from vectorising them)."""
        changed = self.relaid.keys() | self.padded.keys()
        return tuple(replace(p, type=self.types[p.name] if p.name in changed else p.type,
                             restrict=p.restrict or p.direction == "in")
                     for p in self._params)

    # constant inputs ------------------------------------------------------
    def constant(self, port: str) -> np.ndarray | None:
        """The constant fed into input ``port``, if the caller gave it."""
        return self.constants.get(port)

    def relayout(self, port: str, array: np.ndarray) -> None:
        """Read ``array`` (a rearrangement of ``port``'s constant, made once
        when compiling: packed weights) at ``port`` instead of the constant;
        the port's type becomes the array's."""
        assert port in self.constants, f"port '{port}' is not fed by a constant"
        self.types[port] = BufferType(self.element(port), tuple(array.shape))
        self.relaid[port] = np.ascontiguousarray(array)

    # inputs prepared by the caller --------------------------------------
    def read_padded(self, port: str, pads: tuple[int, ...]) -> bool:
        """Read input ``port`` padded with zeros by ``pads`` (as pad.py's
        attribute), where the caller can: a kernel it runs before this
        one pads the input once per launch, for every instance to read in
        place (a convolution's instances would each copy the input rows
        they read, padded).  The port's type becomes the padded one.
        False, and nothing changed, where the caller cannot."""
        shape = self.types[port].shape
        widths = list(zip(pads[:len(shape)], pads[len(shape):]))
        if not self.pads_inputs or port in self.padded or any(
                (lead or trail) and not isinstance(dim, int)
                for dim, (lead, trail) in zip(shape, widths)):
            return False
        self.types[port] = BufferType(self.element(port), padded_shape(shape, widths))
        self.padded[port] = tuple(pads)
        return True

    def asks_channels_last(self, *ports: str) -> bool:
        """Whether the caller stores the activations at ``ports`` all
        channels-last, where the kernel can (stored_channels_last, which
        a lowering still undecided must not ask)."""
        return all(port in self.channels_last for port in ports)

    def stored_channels_last(self, *ports: str) -> bool:
        """Whether the activations at ``ports`` (NCHW by type) are all
        stored channels-last, element (n, c, h, w) at ((n H + h) W + w) C
        + c: true only when the caller stores every one of them so, which
        the kernel then honours.  Ask only in a lowering already chosen,
        which indexes those ports accordingly; a lowering that never asks
        honours none, and the caller stores them NCHW."""
        if not self.asks_channels_last(*ports):
            return False
        self.honoured.update(ports)
        return True

    # sizes and names ------------------------------------------------------
    def dims(self, port: str) -> list[Expr]:
        return [size(d) for d in self.types[port].shape]

    def dim(self, port: str, axis: int) -> Expr:
        return size(self.types[port].shape[axis])

    def element(self, port: str) -> ScalarType:
        return self.types[port].element

    def const(self, value, port: str = "y") -> Const:
        """A constant of ``port``'s element type."""
        return Const(value, self.element(port))

    def reserve(self, names) -> None:
        """Keep ``names`` (locals of a body being rewritten) from fresh names."""
        self._taken.update(names)

    def fresh(self, hint: str) -> str:
        """A local name starting with ``hint`` that clashes with no port,
        shape symbol or earlier local."""
        name, suffix = hint, 0
        while name in self._taken:
            suffix += 1
            name = f"{hint}{suffix}"
        self._taken.add(name)
        return name

    # statements -----------------------------------------------------------
    def emit(self, stmt: Stmt) -> None:
        self._blocks[-1].append(stmt)

    def let(self, hint: str, value: Expr, type: ScalarType | None = None) -> Var:
        """Declare a local initialised to ``value``; returns its Var."""
        name = self.fresh(hint)
        type = type or value.type
        self.emit(Let(name, type, value))
        return Var(name, type)

    def assign(self, var: Var, value: Expr) -> None:
        self.emit(Assign(var.name, value))

    def load(self, port: str, *indices: Expr) -> Load:
        return Load(port, tuple(indices), self.element(port).storage_type)

    def load_broadcast(self, port: str, out_indices: list[Expr]) -> Load:
        """``port``'s element at output position ``out_indices`` under
        numpy broadcasting: dims align on the right, size-1 dims read 0."""
        if not self.types[port].shape:
            return self.load(port, Const(0, I64))
        return self.load(port, *broadcast_indices(self.dims(port), out_indices))

    def store(self, port: str, indices, value: Expr) -> None:
        indices = tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
        self.emit(Store(port, indices, value))

    @contextmanager
    def loop(self, hint: str, stop: Expr, start: Expr | None = None,
             unroll: int | None = None, ivdep: bool = False,
             reduce: tuple[Reduction, ...] = ()) -> Iterator[Var]:
        """``for hint in [start, stop)``; the trip count is noted when fixed;
        ``unroll``, ``ivdep`` and ``reduce`` (the variables the loop folds
        values into, in any order) are the For's."""
        start = start if start is not None else Const(0, I64)
        var = Var(self.fresh(hint), I64)
        self._blocks.append([])
        yield var
        body = tuple(self._blocks.pop())
        first, last = const_value(start), const_value(stop)
        trip = last - first if first is not None and last is not None else None
        self.emit(For(var.name, start, stop, 1, body, unroll=unroll, ivdep=ivdep, trip_count=trip,
                      reduce=reduce))

    @contextmanager
    def when(self, cond: Expr) -> Iterator[None]:
        self._blocks.append([])
        yield
        self.emit(If(cond, tuple(self._blocks.pop())))

    def guard(self, needed: bool, cond: Expr):
        """``when(cond)`` if ``needed``, else no block (for bounds checks
        that only padding makes necessary)."""
        return self.when(cond) if needed else nullcontext()

    # instances ------------------------------------------------------------
    def instance(self) -> Var:
        """This instance's flat index (1-D replication)."""
        return self.let("i", InstanceId(0))

    def unflatten(self, flat: Expr, dims: list[Expr], hints=None) -> list[Expr]:
        """Row-major indices of flat index ``flat`` in an array of ``dims``."""
        hints = hints or [f"i{axis}" for axis in range(len(dims))]
        indices: list[Expr] = [Const(0, I64)] * len(dims)
        live = [axis for axis, dim in enumerate(dims) if const_value(dim) != 1]
        rest = flat
        for position, axis in enumerate(reversed(live)):
            if position == len(live) - 1:  # the outermost: no remainder needed
                indices[axis] = self.let(hints[axis], rest)
                break
            indices[axis] = self.let(hints[axis], rest % dims[axis])
            quotient = rest / dims[axis]
            rest = quotient if position == len(live) - 2 else self.let("rest", quotient)
        return indices

    def broadcast_grid(self, ports) -> "tuple[Expr, dict[str, Expr], tuple[Expr, ...]]":
        """For an op storing one element of ``y`` an instance and reading
        ``ports`` under numpy broadcasting: y's flat index, each port's
        flat index and the replication, the instances laid over the runs
        of y's axes along which the same ports broadcast (broadcast_runs):
        no instance divides its index to find a broadcast port's element,
        and the innermost run is contiguous in y and in every port that
        does not broadcast along it."""
        runs = broadcast_runs(self.dims("y"), {port: self.dims(port) for port in ports})
        extents = [extent for _, extent in runs]
        strides = {port: run_strides(extents, [port not in skip for skip, _ in runs])
                   for port in (*ports, "y")}
        flats, replication = self.grid(extents, strides)
        return flats.pop("y"), flats, replication

    def grid(self, extents: list[Expr], strides: Mapping[str, list[Expr | None]]
             ) -> tuple[dict[str, Expr], tuple[Expr, ...]]:
        """Instances over ``extents`` (outermost first), and each port's
        flat index at one: the sum of the instance's index along each
        extent times the port's stride there (None: it does not move
        along it).  With more extents than a replication has dimensions,
        the outermost share the first, divided out of its index (once per
        instance of the inner dimensions' loops); all of them do where
        there are fewer than GRID_ELEMENTS instances.  Returns the indices
        and the replication."""
        extents = list(extents) or [Const(1, I64)]
        shared = max(len(extents) - MAX_REPLICATION_DIMS + 1, 1)
        whole = const_value(product(extents))
        if whole is not None and whole < GRID_ELEMENTS:
            shared = len(extents)  # small: one dimension, compiled faster
        outer = self.let("i0", InstanceId(0))
        ids = self.unflatten(outer, extents[:shared]) if shared > 1 else [outer]
        ids += [self.let(f"i{k}", InstanceId(k - shared + 1)) for k in range(shared, len(extents))]
        flats = {}
        for port, port_strides in strides.items():
            flat: Expr = Const(0, I64)
            for index, stride in zip(ids, port_strides):
                if stride is not None:
                    flat = add(flat, mul(index, stride))
            flats[port] = flat
        return flats, (product(extents[:shared]), *extents[shared:])

    def instance_indices(self, dims: list[Expr], hints=None) -> tuple[Var, list[Expr]]:
        """The flat instance index and its row-major indices in ``dims``."""
        flat = self.instance()
        return flat, self.unflatten(flat, dims, hints)


GRID_ELEMENTS = 1 << 15
"""Fewer instances than this run over one replication dimension, their
indices divided out of it: a few microseconds of divisions cost less than
compiling the loops of several dimensions (a third more compile time for
the small tensors of onnx's test cases)."""


def broadcast_runs(out_dims: list[Expr], port_dims: Mapping[str, list[Expr]]
                   ) -> list[tuple[frozenset, Expr]]:
    """The runs of adjacent axes of a result of ``out_dims`` (axes of size 1
    left out) along which the same ports broadcast (numpy: dims aligned on
    the right, a missing or size-1 dim broadcasts): (those ports, the
    run's number of elements), outermost first."""
    runs: list[tuple[frozenset, list[Expr]]] = []
    for axis, dim in enumerate(out_dims):
        if const_value(dim) == 1:
            continue
        skip = frozenset(port for port, dims in port_dims.items()
                         if axis < len(out_dims) - len(dims)
                         or const_value(dims[axis - len(out_dims) + len(dims)]) == 1)
        if runs and runs[-1][0] == skip:
            runs[-1][1].append(dim)
        else:
            runs.append((skip, [dim]))
    return [(skip, product(dims)) for skip, dims in runs]


def row_major_strides(dims: list[Expr]) -> list[Expr]:
    """The strides (elements) of a dense row-major array of ``dims``."""
    return run_strides(dims, [True] * len(dims))


def run_strides(extents: list[Expr], present: list[bool]) -> list[Expr | None]:
    """The strides of an array laid row-major over the ``present`` ones of
    ``extents`` (None where it is not)."""
    strides: list[Expr | None] = []
    stride: Expr = Const(1, I64)
    for extent, here in zip(reversed(extents), reversed(present)):
        strides.append(stride if here else None)
        stride = mul(stride, extent) if here else stride
    return strides[::-1]


def replication_over(dims: list[Expr]) -> tuple[Expr, ...]:
    """One instance per element of an array of ``dims`` (flattened)."""
    return (product(dims),)
