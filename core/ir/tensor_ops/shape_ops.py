"""Ops that move data without computing: reshape, flatten, concat, slice
and transpose (ONNX semantics).

reshape: attribute shape (ints; 0 copies the input's dim at that position,
one -1 is inferred).  flatten: y is 2-D, [prod(x.shape[:axis]),
prod(x.shape[axis:])].  concat: variadic inputs x0, x1, ... joined along
axis.  slice: attributes starts, ends, axes (default: the first
len(starts) axes) and steps (default 1s), clamped as ONNX Slice clamps
them; an ONNX Split is one slice per output.  transpose: attribute perm
(a permutation of the axes; default: reversed), y.shape[i] =
x.shape[perm[i]].  Reshape and flatten lower to a flat copy, one instance
per element; slice and transpose to one instance per result element
reading its source element.
"""
from __future__ import annotations

import numpy as np

from ..kernel import Binary, Const, Expr
from ..types import I64, BufferType, Dim
from .dims import describe, product, require_equal, split
from .lowering import (
    KernelBuilder, add, const_value, div, mul, product as size_product, replication_over,
    row_major_strides,
)
from .spec import REQUIRED, OpContext, TensorOpSpec


def _lower_copy(b: KernelBuilder) -> tuple[Expr, ...]:
    i = b.instance()
    b.store("y", i, b.load("x", i))
    return replication_over(b.dims("x"))


def _evaluate_copy(ctx: OpContext, x: dict) -> dict:
    return {"y": x["x"].reshape(ctx.spec.infer_fn(ctx)["y"].shape)}


# reshape ------------------------------------------------------------------
def _infer_reshape(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.same_element()
    wanted = ctx.ints_attr("shape", minimum=-1)
    source = ctx.shape("x")
    if list(wanted).count(-1) > 1:
        ctx.fail(f"attribute 'shape' {list(wanted)} has more than one -1",
                 "let at most one dimension be inferred")
    dims: list[Dim] = []
    for position, dim in enumerate(wanted):
        if dim == 0:
            if position >= len(source):
                ctx.fail(f"'shape' copies dimension {position} (0) but 'x' has rank "
                         f"{len(source)}", "use 0 only at positions 'x' has", "x")
            dim = source[position]
        dims.append(dim)
    if -1 in dims:
        dims[dims.index(-1)] = _inferred_dim(ctx, source, [d for d in dims if d != -1])
    elif split(source) != split(dims):
        _size_mismatch(ctx, source, dims)
    return {"y": BufferType(element, tuple(dims))}


def _inferred_dim(ctx: OpContext, source, known) -> Dim:
    """The dim that makes ``known`` + [it] hold as many elements as ``source``."""
    source_constant, source_symbols = split(source)
    known_constant, known_symbols = split(known)
    rest = source_symbols - known_symbols
    exact = known_constant and source_constant % known_constant == 0
    if not exact or known_symbols - source_symbols or sum(rest.values()) > 1:
        _size_mismatch(ctx, source, known + ["-1"])
    ratio = source_constant // known_constant
    if not rest:
        return ratio
    if ratio != 1:
        _size_mismatch(ctx, source, known + ["-1"])
    return next(iter(rest))


def _size_mismatch(ctx: OpContext, source, dims) -> None:
    ctx.fail(f"cannot reshape 'x' of shape [{', '.join(map(str, source))}] to "
             f"[{', '.join(map(str, dims))}]: the element counts differ or cannot be "
             "shown equal", "give a shape with the same number of elements", "x")


RESHAPE = TensorOpSpec(
    "reshape", ("x",), ("y",), _infer_reshape, _evaluate_copy, _lower_copy,
    attrs={"shape": REQUIRED}, summary="reshape (ONNX Reshape: 0 copies a dim, -1 infers)")


# flatten ------------------------------------------------------------------
def _infer_flatten(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.same_element()
    source = ctx.shape("x")
    axis = ctx.int_attr("axis")
    if not -len(source) <= axis <= len(source):
        ctx.fail(f"attribute 'axis' must be in [{-len(source)}, {len(source)}] for "
                 f"'x' of rank {len(source)}, got {axis}", "choose an axis of 'x'")
    if axis < 0:
        axis += len(source)
    rows = product(ctx, source[:axis], "the row count (dims before axis)", "x")
    cols = product(ctx, source[axis:], "the column count (dims from axis on)", "x")
    return {"y": BufferType(element, (rows, cols))}


FLATTEN = TensorOpSpec(
    "flatten", ("x",), ("y",), _infer_flatten, _evaluate_copy, _lower_copy,
    attrs={"axis": 1}, summary="flatten to 2-D at axis (ONNX Flatten)")


# concat -------------------------------------------------------------------
def _infer_concat(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.same_element()
    ports = list(ctx.types)
    first = ctx.shape(ports[0])
    if not first:
        ctx.fail("inputs must have rank 1 or more", "pass tensors with an axis", ports[0])
    axis = ctx.axis_attr("axis", len(first))
    for port in ports[1:]:
        ctx.expect_rank(port, len(first))
        for dim, (mine, theirs) in enumerate(zip(ctx.shape(port), first)):
            if dim != axis:
                require_equal(ctx, mine, theirs, f"dimension {dim} of '{port}'",
                              f"that of '{ports[0]}'", port)
    lengths = [ctx.shape(port)[axis] for port in ports]
    if len(lengths) > 1 and any(isinstance(d, str) for d in lengths):
        port = next(p for p, d in zip(ports, lengths) if isinstance(d, str))
        ctx.fail(f"the joined dimension {axis} of '{port}' is the symbol "
                 f"{describe(ctx.shape(port)[axis])}, so the result's has no name",
                 f"give the inputs fixed sizes along axis {axis}", port)
    joined = lengths[0] if len(lengths) == 1 else sum(lengths)
    return {"y": BufferType(element, first[:axis] + (joined,) + first[axis + 1:])}


def _lower_concat(b: KernelBuilder) -> tuple[Expr, ...]:
    axis = b.ctx.axis_attr("axis", b.ctx.rank("x0"))
    out_dims = b.dims("y")
    inner = size_product(out_dims[axis + 1:])
    i = b.instance()
    within = b.let("j", i % inner) if const_value(inner) != 1 else Const(0, I64)
    rest = b.let("rest", div(i, inner))
    position = b.let("a", rest % out_dims[axis]) if axis > 0 else rest
    outer = b.let("o", rest / out_dims[axis]) if axis > 0 else Const(0, I64)
    ports = list(b.ctx.types)
    offset = 0
    for number, port in enumerate(ports):
        length = b.dim(port, axis)
        start, stop = Const(offset, I64), add(Const(offset, I64), length)
        cond = _segment(position, start, stop, number == 0, number == len(ports) - 1)
        with b.guard(cond is not None, cond):
            local = add(mul(outer, length), add(position, Const(-offset, I64)))
            b.store("y", i, b.load(port, add(mul(local, inner), within)))
        offset += length.value if isinstance(length, Const) else 0
    return replication_over(out_dims)


def _segment(position: Expr, start: Expr, stop: Expr, first: bool, last: bool):
    """``start <= position < stop``, dropping the bounds always true."""
    if first and last:
        return None
    if first:
        return position.lt(stop)
    if last:
        return position.ge(start)
    return Binary("land", position.ge(start), position.lt(stop))


def _evaluate_concat(ctx: OpContext, x: dict) -> dict:
    axis = ctx.axis_attr("axis", ctx.rank("x0"))
    return {"y": np.concatenate([x[port] for port in ctx.types], axis=axis)}


CONCAT = TensorOpSpec(
    "concat", ("x0",), ("y",), _infer_concat, _evaluate_concat, _lower_concat,
    attrs={"axis": 1}, variadic=True,
    summary="join x0, x1, ... along axis (ONNX Concat)")

# slice --------------------------------------------------------------------
def slice_ranges(ctx: OpContext) -> dict[int, tuple[int, int, int, int]]:
    """Per sliced axis: (start, stop, step, length) after ONNX's clamping;
    ``stop`` is exclusive and -1 means 'through index 0' for a negative step."""
    rank = ctx.rank("x")
    starts, ends = ctx.ints_attr("starts"), ctx.ints_attr("ends")
    axes = ctx.ints_attr("axes") or tuple(range(len(starts)))
    steps = ctx.ints_attr("steps") or (1,) * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        ctx._bad_attr("starts", "as many starts, ends, axes and steps")
    if len({a % rank for a in axes}) != len(axes) or any(not -rank <= a < rank for a in axes):
        ctx._bad_attr("axes", f"distinct axes in [{-rank}, {rank - 1}]")
    if 0 in steps:
        ctx._bad_attr("steps", "non-zero integers")
    for axis in axes:
        dim = ctx.shape("x")[axis % rank]
        if not isinstance(dim, int):
            ctx.fail(f"dimension {axis % rank} of 'x' is the symbol {describe(dim)}; slicing "
                     "it needs its size", "give that dimension a fixed size", "x")
    return clamped_ranges(ctx.shape("x"), ctx.attrs)


def clamped_ranges(shape: tuple, attrs: dict) -> dict[int, tuple[int, int, int, int]]:
    """slice_ranges for checked attributes and a shape known on the sliced axes."""
    starts, ends = attrs["starts"], attrs["ends"]
    axes = attrs.get("axes") or tuple(range(len(starts)))
    steps = attrs.get("steps") or (1,) * len(starts)
    ranges = {}
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis %= len(shape)
        dim = shape[axis]
        start, end = (v + dim if v < 0 else v for v in (start, end))
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
            length = max(0, -(-(end - start) // step))
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            length = max(0, -(-(start - end) // -step))
        ranges[axis] = (start, end, step, length)
    return ranges


def _infer_slice(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.same_element()
    shape = list(ctx.shape("x"))
    for axis, (_, _, _, length) in slice_ranges(ctx).items():
        if length == 0:
            ctx.fail(f"the slice of axis {axis} is empty", "select at least one element", "x")
        shape[axis] = length
    return {"y": BufferType(element, tuple(shape))}


def _evaluate_slice(ctx: OpContext, x: dict) -> dict:
    data = x["x"]
    for axis, (start, _, step, length) in slice_ranges(ctx).items():
        data = np.take(data, start + step * np.arange(length), axis=axis)
    return {"y": data}


def _lower_slice(b: KernelBuilder) -> tuple[Expr, ...]:
    out_dims = b.dims("y")
    i, indices = b.instance_indices(out_dims)
    ranges = slice_ranges(b.ctx)
    source = [add(Const(ranges[a][0], I64), mul(Const(ranges[a][2], I64), index))
              if a in ranges else index for a, index in enumerate(indices)]
    b.store("y", i, b.load("x", *source))
    return replication_over(out_dims)


SLICE = TensorOpSpec(
    "slice", ("x",), ("y",), _infer_slice, _evaluate_slice, _lower_slice,
    attrs={"starts": REQUIRED, "ends": REQUIRED, "axes": (), "steps": ()},
    summary="elements start:end:step along axes (ONNX Slice; ONNX Split as one per output)")


# transpose ----------------------------------------------------------------
def transpose_perm(ctx: OpContext) -> tuple[int, ...]:
    """The checked permutation: attribute 'perm', or the axes reversed."""
    rank = ctx.rank("x")
    perm = ctx.ints_attr("perm") or tuple(reversed(range(rank)))
    if sorted(perm) != list(range(rank)):
        ctx._bad_attr("perm", f"a permutation of 0..{rank - 1} (one entry per axis of 'x')")
    return tuple(perm)


def _infer_transpose(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.same_element()
    shape = ctx.shape("x")
    return {"y": BufferType(element, tuple(shape[a] for a in transpose_perm(ctx)))}


def _evaluate_transpose(ctx: OpContext, x: dict) -> dict:
    return {"y": np.ascontiguousarray(np.transpose(x["x"], transpose_perm(ctx)))}


def _lower_transpose(b: KernelBuilder) -> tuple[Expr, ...]:
    """Instances over runs of y's axes that are adjacent, in order, in x
    too (each run contiguous in both), so that no instance divides its
    index to find its element of x."""
    out_dims = b.dims("y")
    perm = transpose_perm(b.ctx)
    out_strides, in_strides = row_major_strides(out_dims), row_major_strides(b.dims("x"))
    runs: list[list] = []   # [extent, y's stride, x's stride, x's axis] of each run
    for position, axis in enumerate(perm):
        if const_value(out_dims[position]) == 1:
            continue
        if runs and runs[-1][3] == axis - 1:
            runs[-1] = [mul(runs[-1][0], out_dims[position]), out_strides[position],
                        in_strides[axis], axis]
        else:
            runs.append([out_dims[position], out_strides[position], in_strides[axis], axis])
    at, replication = b.grid([run[0] for run in runs], {"y": [run[1] for run in runs],
                                                        "x": [run[2] for run in runs]})
    b.store("y", at["y"], b.load("x", at["x"]))
    return replication


TRANSPOSE = TensorOpSpec(
    "transpose", ("x",), ("y",), _infer_transpose, _evaluate_transpose, _lower_transpose,
    attrs={"perm": ()},
    summary="axes reordered: y.shape[i] = x.shape[perm[i]] (ONNX Transpose)")

OPS = (RESHAPE, FLATTEN, CONCAT, SLICE, TRANSPOSE)
