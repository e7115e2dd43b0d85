"""``rowwise``: elementwise functions and reductions along the rows of a
tensor, as one op, so that a layer norm or a softmax written as a dozen
ops reads its input once (made by the pass ``fuse-rows``; written by hand
too).

Ports ``x0 ... xk`` and ``y``.  Attribute ``axes``: how many trailing axes
of y make a row (1: the last).  Attribute ``program``: instructions, each
defining the value numbered by its position (operands name earlier ones)::

    ("input", k)            xk, broadcast to y's shape (numpy rules)
    ("unary", fn, a)        fn(a): a float function of the op unary
                            (chain.FLOAT_UNARY), or relu, tanh, sigmoid
    ("binary", fn, a, b)    fn(a, b): a function of the op binary with a
                            float result (chain.FLOAT_BINARY)
    ("clip", low, high, a)  min(max(a, low), high)
    ("select", c, a, b)     a where c, else b: c an input of bool elements
                            (a mask), read by selects only
    ("reduce", fn, a)       fn (sum, prod, max, min) of a over its row

A value is *per row* (a reduction; an input whose row axes are all 1; a
function of per-row values) or *per element*.  An input's row axes are
all 1 or all y's; a reduction folds a per-element value; the last value,
per element, is y.  Layer norm over the last axis::

    0 input x   1 reduce sum 0   2 input 1/n   3 binary mul 1 2
    4 binary sub 0 3   5 binary mul 4 4   6 reduce sum 5   ...

Each value rounds to the element type as the separate op would.  The
lowering runs one instance per row: a loop over the row for each
reduction (its fold promised, For.reduce, so a target may vectorise it or
share it among a work group), then one storing y (its iterations
independent, ivdep); per-row values are computed once, per-element ones
in every loop that needs them.  When y reuses the value the last
reduction folded and that value costs a transcendental function
(softmax's exponentials), the reduction's loop stores it in y and the
last loop reads it back.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..kernel import Const, Expr, Select, Var
from ..types import I64, BufferType, ScalarType
from .activation import apply_kernel, apply_numpy
from .chain import FLOAT_BINARY, FLOAT_UNARY
from .dims import broadcast_shape
from .lowering import KernelBuilder, add, maximum, minimum, mul, product, row_major_strides
from .reduce import NUMPY_REDUCTIONS, combine, fold_promise, initial
from .scalar_functions import BINARY, UNARY
from .spec import REQUIRED, OpContext, TensorOpSpec

ACTIVATIONS = ("relu", "tanh", "sigmoid")
REDUCTIONS = ("sum", "prod", "max", "min")
COSTLY = ("exp", "log", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
          "asinh", "acosh", "atanh", "tanh", "sigmoid", "pow")
"""Functions worth storing a value in y rather than computing it twice."""
FORMS = ('["input", k]', '["unary", fn, a]', '["binary", fn, a, b]', '["clip", low, high, a]',
         '["select", c, a, b]', '["reduce", fn, a]')


def operands(instruction: tuple) -> tuple[int, ...]:
    """The values an instruction reads."""
    kind = instruction[0]
    if kind == "input":
        return ()
    if kind == "binary":
        return instruction[2:4]
    if kind == "select":
        return instruction[1:4]
    return instruction[-1:]


def _valid(instruction, position: int, inputs: int) -> bool:
    if not isinstance(instruction, tuple) or not instruction:
        return False
    kind, args = instruction[0], instruction[1:]
    shapes = {"input": (int,), "unary": (str, int), "binary": (str, int, int),
              "clip": ((int, float), (int, float), int), "select": (int, int, int),
              "reduce": (str, int)}
    if kind not in shapes or len(args) != len(shapes[kind]) or \
            not all(isinstance(a, t) and type(a) is not bool for a, t in zip(args, shapes[kind])):
        return False
    if kind == "input":
        return 0 <= args[0] < inputs
    named = {"unary": FLOAT_UNARY + ACTIVATIONS, "binary": FLOAT_BINARY, "reduce": REDUCTIONS}
    if kind in named and args[0] not in named[kind]:
        return False
    return all(0 <= a < position for a in operands(instruction))


def _row_part(ctx: OpContext, port: str, axes: int) -> str:
    """'full' when the port's row axes are y's, 'row' when all 1, else ''."""
    return row_part(tuple(ctx.shape(port)), tuple(result_shape(ctx)), axes)


def row_part(shape: tuple, rows_shape: tuple, axes: int) -> str:
    """'full' when the last ``axes`` axes of ``shape`` are those of
    ``rows_shape``, 'row' when all 1, else ''."""
    row = ((1,) * axes + shape)[-axes:]
    return "row" if all(d == 1 for d in row) else "full" if row == rows_shape[-axes:] else ""


def result_shape(ctx: OpContext) -> tuple:
    return broadcast_shape(ctx, tuple(p for p in ctx.types if p != "y"))


def checked(ctx: OpContext) -> tuple[int, tuple, list[str]]:
    """(axes, program, level of each value: 'row' or 'element')."""
    inputs = [p for p in ctx.types if p != "y"]
    program, axes = ctx.attrs["program"], ctx.attrs["axes"]
    shape = result_shape(ctx)
    if type(axes) is not int or not 1 <= axes <= len(shape):
        ctx._bad_attr("axes", f"an integer from 1 to y's rank {len(shape)}")
    if not isinstance(program, tuple) or not program or not all(
            _valid(s, i, len(inputs)) for i, s in enumerate(program)):
        ctx._bad_attr("program", "a non-empty list of instructions, each one of "
                      + ", ".join(FORMS) + " reading earlier values and inputs x0 ... x"
                      + str(len(inputs) - 1))
    levels: list[str] = []
    for position, instruction in enumerate(program):
        if instruction[0] == "input":
            port = f"x{instruction[1]}"
            part = _row_part(ctx, port, axes)
            if not part:
                ctx.fail(f"input '{port}' of shape {ctx.types[port]}: its last {axes} axes "
                         f"must be all 1 or those of y {shape}", "reshape or expand the input",
                         port)
            levels.append("row" if part == "row" else "element")
        elif instruction[0] == "reduce":
            if levels[instruction[2]] != "element":
                ctx.fail(f"instruction {position} reduces a per-row value",
                         "reduce a per-element value", "program")
            levels.append("row")
        else:
            levels.append("element" if any(levels[a] == "element"
                                           for a in operands(instruction)) else "row")
    if levels[-1] != "element":
        ctx.fail("the last instruction gives one value per row; y needs one per element",
                 "end the program with a per-element value", "program")
    _check_conditions(ctx, program)
    read = {s[1] for s in program if s[0] == "input"}
    for index, port in enumerate(inputs):
        if index not in read:
            ctx.fail(f"input '{port}' is read by no instruction",
                     f"add ['input', {index}] or remove the input", port)
    return axes, program, levels


def _check_conditions(ctx: OpContext, program: tuple) -> None:
    """Bool inputs are read as select conditions, and conditions are bool
    inputs."""
    def is_mask(value: int) -> bool:
        return program[value][0] == "input" and ctx.element(f"x{program[value][1]}").is_bool
    for position, instruction in enumerate(program):
        reads = operands(instruction)
        conditions = reads[:1] if instruction[0] == "select" else ()
        for value in reads:
            if is_mask(value) != (value in conditions):
                port = f"x{program[value][1]}" if program[value][0] == "input" else "program"
                ctx.fail(f"instruction {position} reads value {value} "
                         + ("as a select's condition, which must be an input of bool elements"
                            if value in conditions else "of bool elements as a number"),
                         "read masks (bool inputs) only as the first operand of selects", port)


def element_type(ctx: OpContext) -> ScalarType:
    """The float element of the inputs, masks (bool inputs) aside."""
    numbers = {p: t for p, t in ctx.types.items() if not t.element.is_bool}
    return OpContext(ctx.spec, numbers or dict(ctx.types), ctx.attrs, ctx.node).float_element()


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    element = element_type(ctx)
    checked(ctx)
    return {"y": BufferType(element, result_shape(ctx))}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    axes, program, _ = checked(ctx)
    shape = result_shape(ctx)
    kind = element_type(ctx).numpy_dtype.type
    row_axes = tuple(range(-axes, 0))
    values: list[np.ndarray] = []
    for instruction in program:
        name, args = instruction[0], instruction[1:]
        if name == "input":
            value = x[f"x{args[0]}"]
        elif name == "unary":
            a = values[args[1]]
            value = apply_numpy(args[0], a) if args[0] in ACTIVATIONS else UNARY[args[0]].numpy(a)
        elif name == "binary":
            value = BINARY[args[0]].numpy(values[args[1]], values[args[2]])
        elif name == "clip":
            value = np.minimum(np.maximum(values[args[2]], kind(args[0])), kind(args[1]))
        elif name == "select":
            value = np.where(values[args[0]] != 0, values[args[1]], values[args[2]])
        else:
            full = np.broadcast_to(values[args[1]], np.broadcast_shapes(values[args[1]].shape,
                                                                         shape))
            value = NUMPY_REDUCTIONS[args[0]](full, axis=row_axes, keepdims=True)
        values.append(np.asarray(value).astype(kind, copy=False))
    return {"y": np.broadcast_to(values[-1], shape).copy()}


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    axes, program, levels = checked(b.ctx)
    dims = b.dims("y")
    outer, length = dims[:-axes], product(dims[-axes:])
    row, outer_indices = b.instance_indices(outer) if outer else (b.instance(), [])
    read = row_reader(b, [p for p in b.types if p != "y"], tuple(b.types["y"].shape),
                      outer_indices, row, length, axes)
    base_y = b.let("base_y", mul(row, length))
    lower_row(b, program, levels, length, lambda k, j: read(f"x{k}", j),
              lambda j, value: b.store("y", add(base_y, j), value),
              lambda j: b.load("y", add(base_y, j)))
    return (product(outer),)


def row_reader(b: KernelBuilder, ports: list[str], rows_shape: tuple, outer_indices: list[Expr],
               row: Expr, length: Expr, axes: int = 1) -> Callable[[str, Expr | None], Expr]:
    """``read(port, j)``: the element of input ``port`` (broadcast to
    ``rows_shape``) at column j of row ``row`` (at ``outer_indices``);
    j None for a port with one value per row.  Each port's offset at the
    row's start is computed once, here."""
    bases = {port: b.let(f"base_{port}", _row_base(b, port, rows_shape, outer_indices, row,
                                                  length)) for port in ports}
    whole = {port for port in ports
             if row_part(tuple(b.types[port].shape), rows_shape, axes) == "full"}

    def read(port: str, j: Expr | None) -> Expr:
        return b.load(port, add(bases[port], j) if port in whole and j is not None
                      else bases[port])
    return read


def lower_row(b: KernelBuilder, program: tuple, levels: list[str], length: Expr,
              read: Callable[[int, Expr | None], Expr], write: Callable[[Expr, Expr], None],
              result: Callable[[Expr], Expr], in_place: bool = False) -> None:
    """The statements computing one row of ``program`` (levels as
    ``checked`` gives them) of ``length`` elements: ``read(k, j)`` is input
    k at column j of the row (j None: input k is per row), ``write(j,
    value)`` stores y's element j and ``result(j)`` loads it back.
    ``in_place``: y's row is input 0's (attention's scores), so a value is
    cached in y only where y's last loop need not read input 0 again."""
    element = b.element("y")
    per_row: dict[int, Expr] = {}

    def in_loop(j: Var, memo: dict[int, Expr]):
        def value(n: int) -> Expr:
            if levels[n] == "row":
                return per_row[n]
            if n not in memo:
                memo[n] = b.let(f"v{n}", _expr(b, program[n], value,
                                               lambda k: read(k, j)))
            return memo[n]
        return value

    reductions = [n for n, s in enumerate(program) if s[0] == "reduce"]
    cached = _cached_value(program, levels, reductions, element)
    if in_place and cached is not None and ("input", 0) in (
            program[n] for n in _element_cone(program, levels, len(program) - 1, cached)):
        cached = None
    for n, instruction in enumerate(program):
        if instruction[0] == "reduce":
            fn, argument = instruction[1], instruction[2]
            acc = b.let("acc", initial(element, fn))
            stores = n == reductions[-1] and argument == cached
            with b.loop("j", length, ivdep=stores, reduce=fold_promise(fn, acc)) as j:
                folded = in_loop(j, {})(argument)
                if stores:
                    write(j, folded)
                b.assign(acc, combine(fn, acc, folded))
            per_row[n] = acc
        elif levels[n] == "row":
            per_row[n] = b.let(f"r{n}", _expr(b, instruction, per_row.__getitem__,
                                              lambda k: read(k, None)))
    with b.loop("j", length, ivdep=True) as j:
        memo = {cached: result(j)} if cached is not None else {}
        write(j, in_loop(j, memo)(len(program) - 1))


def _row_base(b: KernelBuilder, port: str, rows_shape: tuple, outer_indices: list[Expr],
             row: Expr, length: Expr) -> Expr:
    """The flat offset of ``port``'s element at the start of row ``row``
    (at ``outer_indices``) of a tensor of ``rows_shape`` it broadcasts to."""
    shape = tuple(b.types[port].shape)
    if shape == rows_shape:
        return mul(row, length)
    missing = len(rows_shape) - len(shape)
    padded = (1,) * missing + shape
    strides = row_major_strides([Const(1, I64)] * missing + b.dims(port))
    offset: Expr = Const(0, I64)
    for axis, index in enumerate(outer_indices):
        if padded[axis] != 1:
            offset = add(offset, mul(index, strides[axis]))
    return offset


def _expr(b: KernelBuilder, instruction: tuple, value, read) -> Expr:
    name, args = instruction[0], instruction[1:]
    if name == "input":
        return read(args[0])
    if name == "unary":
        a = value(args[1])
        return apply_kernel(args[0], a) if args[0] in ACTIVATIONS else UNARY[args[0]].kernel(a)
    if name == "binary":
        return BINARY[args[0]].kernel(value(args[1]), value(args[2]))
    if name == "select":
        return Select(value(args[0]), value(args[1]), value(args[2]))
    low, high = (b.const(float(v)) for v in args[:2])
    return minimum(maximum(value(args[2]), low), high)


def _cached_value(program: tuple, levels: list[str], reductions: list[int],
                  element) -> int | None:
    """The value the last reduction folds, when y reuses it and it costs a
    transcendental function: stored in y by that reduction's loop."""
    if not reductions or element.is_narrow:
        return None
    argument = program[reductions[-1]][2]
    used_by_y = _element_cone(program, levels, len(program) - 1)
    costly = any(program[n][0] in ("unary", "binary") and program[n][1] in COSTLY
                 for n in _element_cone(program, levels, argument))
    return argument if argument in used_by_y and costly else None


def _element_cone(program: tuple, levels: list[str], top: int,
                  cached: int | None = None) -> set[int]:
    """The per-element values ``top`` is computed from (itself included),
    not looking past ``cached`` (a value loaded, not computed)."""
    seen, stack = set(), [top]
    while stack:
        n = stack.pop()
        if n in seen or levels[n] != "element" or n == cached:
            continue
        seen.add(n)
        stack.extend(operands(program[n]))
    return seen


ROWWISE = TensorOpSpec(
    "rowwise", ("x0",), ("y",), _infer, _evaluate, _lower,
    attrs={"axes": 1, "program": REQUIRED}, variadic=True,
    summary="y = a program of elementwise functions and reductions along the rows of its "
            "inputs (layer norm, softmax ... as one op)")

OPS = (ROWWISE,)
