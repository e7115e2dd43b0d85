"""Approximation by skipping work (ApproxHPVM's perforation and sampling):
the shared index arithmetic, and the ``perforation_fill`` op.

A *skip pattern* ``(every, offset)`` (``every`` in 2..MAX_EVERY, ``0 <=
offset < every``) skips the positions ``i`` with ``i % every == offset``.

Perforation applies it to an output axis of a conv2d
(``perforate_rows`` / ``perforate_cols``): the op computes only the kept
positions, stored *compactly* (in order, without gaps), and a
``perforation_fill`` node expands them to the full length, each skipped
position the mean of its kept neighbours (one of them at either end).  An
axis of length 1 is never perforated.  Position ``j`` of the compact axis
is real position ``j + (j + every - 1 - offset) // (every - 1)``; real
position ``r`` (kept) is compact position ``r - (r + every - 1 - offset) //
every``.

Sampling applies it to the taps of a reduction (conv2d ``sample_filter``,
pooling ``sample``); see those ops.

perforation_fill: x (the compact values) -> y; attributes ``axis``,
``every``, ``offset``, ``size`` (the full length of ``axis``).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Const, Expr, Select
from ..types import BOOL, I64, BufferType
from .lowering import KernelBuilder, add, mul, replication_over
from .spec import REQUIRED, OpContext, TensorOpSpec

MAX_EVERY = 16
"""Largest ``every`` of a skip pattern."""
CONV_APPROXIMATIONS = ("perforate_rows", "perforate_cols", "sample_filter")
"""conv2d's approximation attributes."""


def skip_pattern(ctx: OpContext, name: str) -> tuple[int, int] | None:
    """Attribute ``name`` as ``(every, offset)``, or None when it is ``()``
    (no skipping); an error naming the attribute otherwise."""
    value = ctx.attrs[name]
    if value == ():
        return None
    ok = (isinstance(value, tuple) and len(value) == 2
          and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
    if not ok or not 2 <= value[0] <= MAX_EVERY or not 0 <= value[1] < value[0]:
        ctx.fail(f"attribute '{name}' must be () or (every, offset) with 2 <= every <= "
                 f"{MAX_EVERY} and 0 <= offset < every, got {value!r}",
                 f"set {name} to e.g. (2, 0): skip the positions i with i % 2 == 0")
    return value


def approximated(ctx: OpContext, names=CONV_APPROXIMATIONS) -> bool:
    """Whether any of the skip-pattern attributes ``names`` is set (the
    lowerings that compute every output exactly decline then)."""
    return any(skip_pattern(ctx, name) is not None for name in names)


def kept_length(size: int, every: int, offset: int) -> int:
    """How many of ``size`` positions a skip pattern keeps."""
    if size < 2:
        return size
    return size - (size + every - 1 - offset) // every


def kept_positions(size: int, every: int, offset: int) -> np.ndarray:
    """The real positions kept, in order."""
    positions = np.arange(size)
    return positions if size < 2 else positions[positions % every != offset]


def real_position(j: Expr, every: int, offset: int) -> Expr:
    """Kernel expression: the real position of compact position ``j``."""
    gaps = add(j, Const(every - 1 - offset, I64))
    return add(j, gaps / Const(every - 1, I64) if every > 2 else gaps)


def compact_position(r, every: int, offset: int):
    """The compact position of kept real position ``r`` (an int, array or
    kernel expression)."""
    if isinstance(r, Expr):
        return r - add(r, Const(every - 1 - offset, I64)) / Const(every, I64)
    return r - (r + every - 1 - offset) // every


def perforated(ctx: OpContext, size, every_offset) -> object:
    """The compact length of an axis of ``size`` under ``every_offset``
    (None: not perforated); the axis must have a fixed length."""
    if every_offset is None:
        return size
    if not isinstance(size, int):
        ctx.fail(f"cannot perforate an axis of symbolic length '{size}'",
                 "perforate only axes of fixed length")
    return kept_length(size, *every_offset)


def fill_sources(size: int, every: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """For each real position, the two compact positions whose mean it
    takes: itself twice when kept, its kept neighbours when skipped."""
    real = np.arange(size)
    skipped = (real % every == offset) & (size > 1)
    below = np.where(real > 0, real - 1, real + 1)
    above = np.where(real < size - 1, real + 1, real - 1)
    first = np.where(skipped, compact_position(below, every, offset),
                     compact_position(real, every, offset))
    second = np.where(skipped, compact_position(above, every, offset), first)
    return first, second


# sampling in kernels -------------------------------------------------------
def sampled_tap(b: KernelBuilder, sampling, tap: tuple[Expr, Expr, Expr],
                window: tuple[Expr, Expr]):
    """A block run only for the filter taps ``sample_filter`` keeps
    (``window``: the filter's rows and columns)."""
    if sampling is None:
        return b.guard(False, None)
    c, r, s = tap
    index = add(mul(add(mul(c, window[0]), r), window[1]), s)
    every, offset = sampling
    return b.when((index % Const(every, I64)).ne(Const(offset, I64)))


def sampled_sum(b: KernelBuilder, total: Expr, bias: Expr | None, sampling) -> Expr:
    """``total`` (the sum over the taps) scaled by every / (every - 1) when
    sampling, plus ``bias`` (unscaled) when given."""
    if sampling is not None:
        total = total * b.const(sampling[0] / (sampling[0] - 1))
    return total + bias if bias is not None else total


# perforation_fill -----------------------------------------------------------
def _fill_attrs(ctx: OpContext) -> tuple[int, int, int, int]:
    """(axis, every, offset, size), checked against x."""
    rank = ctx.rank("x")
    axis = ctx.axis_attr("axis", rank)
    every = ctx.int_attr("every", minimum=2)
    offset = ctx.int_attr("offset", minimum=0)
    size = ctx.int_attr("size", minimum=1)
    if every > MAX_EVERY or offset >= every:
        ctx.fail(f"every={every}, offset={offset}: need every <= {MAX_EVERY} and "
                 "offset < every", "use a skip pattern such as every=2, offset=0")
    if ctx.shape("x")[axis] != kept_length(size, every, offset):
        ctx.fail(f"input 'x' has {ctx.shape('x')[axis]} positions on axis {axis} but "
                 f"size={size} keeps {kept_length(size, every, offset)}",
                 "set size to the full length of the perforated axis", "x")
    return axis, every, offset, size


def _infer_fill(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    axis, _, _, size = _fill_attrs(ctx)
    shape = list(ctx.shape("x"))
    shape[axis] = size
    return {"y": BufferType(element, tuple(shape))}


def _evaluate_fill(ctx: OpContext, x: dict) -> dict:
    axis, every, offset, size = _fill_attrs(ctx)
    first, second = fill_sources(size, every, offset)
    values = x["x"]
    half = values.dtype.type(0.5)
    return {"y": (np.take(values, first, axis) + np.take(values, second, axis)) * half}


def _lower_fill(b: KernelBuilder) -> tuple[Expr, ...]:
    axis, every, offset, size = _fill_attrs(b.ctx)
    out_dims = b.dims("y")
    i, indices = b.instance_indices(out_dims)
    real = b.let("r", indices[axis])
    skipped = b.let("skipped", (real % Const(every, I64)).eq(Const(offset, I64)) if size > 1
                    else Const(False, BOOL))
    last = Const(size - 1, I64)
    below = Select(real.gt(Const(0, I64)), add(real, Const(-1, I64)), add(real, Const(1, I64)))
    above = Select(real.lt(last), add(real, Const(1, I64)), add(real, Const(-1, I64)))
    own = b.let("own", compact_position(real, every, offset))
    first = b.let("first", Select(skipped, compact_position(below, every, offset), own))
    second = b.let("second", Select(skipped, compact_position(above, every, offset), own))

    def at(position):
        return b.load("x", *(position if a == axis else index for a, index in enumerate(indices)))
    b.store("y", i, (at(first) + at(second)) * b.const(0.5))
    return replication_over(out_dims)


PERFORATION_FILL = TensorOpSpec(
    "perforation_fill", ("x",), ("y",), _infer_fill, _evaluate_fill, _lower_fill,
    attrs={"axis": REQUIRED, "every": REQUIRED, "offset": REQUIRED, "size": REQUIRED},
    summary="expand a perforated axis: skipped positions are the mean of their neighbours")

OPS = (PERFORATION_FILL,)
