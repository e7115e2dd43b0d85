"""Names a user writes in hpvm programs and kernels.

Types: ``f32``, ``i64`` ... (the IR's scalar types; inside kernels ``f32(x)``
is a cast), ``Buffer[f32, "H", "W"]`` (a buffer with shape symbols H, W;
``Buffer[f32]`` is a flat buffer of any length), and the direction wrappers
``Out[...]``, ``InOut[...]``, ``Private[...]`` for kernel and program
parameters whose direction should not be inferred.

Markers used only inside ``@hpvm.program`` / ``@hpvm.kernel`` source (the
front end reads the source; calling them from Python raises): parallel_loop,
task, buffer, loop, instance_id, instance_count, barrier, private_array,
local_array, atomic_add / atomic_min / atomic_max, reduce, and the math
functions.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.types import (
    BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, BufferType,
    ScalarType,
)
from .errors import frontend_error

f16, f32, f64 = F16, F32, F64
i8, i16, i32, i64 = I8, I16, I32, I64
u8, u16, u32, u64 = U8, U16, U32, U64
bool_ = BOOL


class Buffer:
    """``Buffer[f32, "H", "W"]``: a buffer type; dims are ints or shape
    symbol names.  ``Buffer[f32]`` has no fixed shape (flat, any length)."""

    def __class_getitem__(cls, item) -> BufferType:
        items = item if isinstance(item, tuple) else (item,)
        element, dims = items[0], items[1:]
        if not isinstance(element, ScalarType):
            raise frontend_error(f"Buffer element type {element!r} is not a scalar type",
                                 'write Buffer[f32, "N"] with an hpvm type such as f32, i32')
        for dim in dims:
            if not (isinstance(dim, str) and dim.isidentifier()) and not (
                    isinstance(dim, int) and dim >= 0):
                raise frontend_error(f"Buffer dimension {dim!r} is neither a size nor a name",
                                     'write dims as non-negative ints or names: Buffer[f32, "N", 3]')
        return BufferType(element, tuple(dims) if dims else None)


@dataclass(frozen=True)
class Directed:
    """A parameter type with an explicit direction (see Out, InOut, Private)."""

    type: BufferType
    direction: str


def _direction_wrapper(direction: str):
    class Wrapper:
        __doc__ = f"``{direction.title()}[Buffer[...]]``: a buffer parameter of direction '{direction}'."

        def __class_getitem__(cls, item) -> Directed:
            if not isinstance(item, BufferType):
                raise frontend_error(f"{direction.title()}[...] wraps a buffer type, not {item!r}",
                                     f'write {direction.title()}[Buffer[f32, "N"]]')
            return Directed(item, direction)
    Wrapper.__name__ = Wrapper.__qualname__ = {"out": "Out", "inout": "InOut",
                                               "private": "Private", "in": "In"}[direction]
    return Wrapper


In = _direction_wrapper("in")
Out = _direction_wrapper("out")
InOut = _direction_wrapper("inout")
Private = _direction_wrapper("private")


def _marker(name: str, doc: str):
    def marker(*args, **kwargs):
        raise frontend_error(
            f"'{name}' is part of the hpvm kernel language and cannot be called from Python",
            "use it inside a function decorated with @hpvm.program or @hpvm.kernel")
    marker.__name__ = marker.__qualname__ = name
    marker.__doc__ = doc
    marker.hpvm_marker = name
    return marker


parallel_loop = _marker("parallel_loop", """``for i, j in parallel_loop(n, m, ins=(..), outs=(..),
privates=(..), name="..", hint=".."):`` a leaf node replicated n x m whose
kernel is the loop body (1 to 3 dimensions).""")
task = _marker("task", """``with task(ins=(..), outs=(..), privates=(..), name="..", hint=".."):``
a node without replication; holding kernel code it is a leaf, holding
parallel loops and tasks it is an internal node with a child graph.""")
buffer = _marker("buffer", """``tmp = buffer(f32, ("H", "W"))``: an intermediate buffer of the
program (dims: ints or shape symbols of the program's parameters).""")
empty = buffer
loop = _marker("loop", """``for k in loop(start, stop, step=1, unroll=None, ivdep=False,
trip_count=None):`` a sequential loop with hints; ``trip_count`` is the
expected iteration count (the isNonZeroLoop marker of HPVM).""")
instance_id = _marker("instance_id", "``instance_id(d)``: this instance's index in dimension d.")
instance_count = _marker("instance_count", "``instance_count(d)``: replication size in dimension d.")
barrier = _marker("barrier", "``barrier()``: wait for the work group; local arrays become visible.")
private_array = _marker("private_array", "``a = private_array(f32, (3, 3))``: a zeroed per-instance array.")
local_array = _marker("local_array", "``a = local_array(f32, (16,))``: a zeroed array shared by the work group.")
reduce = _marker("reduce", """``total = reduce("+", (x[i] for i in range(n)), initial=0.0)``:
fold values with +, *, min, max, &, | or ^, or an associative and
commutative @kernel helper (a, b) -> value with ``identity=`` (a reduction
loop that passes may run in parallel: parallel-reduce).""")  # noqa: A001
atomic_add = _marker("atomic_add", "``atomic_add(buf[i], v)``: atomically add; returns the old value.")
atomic_min = _marker("atomic_min", "``atomic_min(buf[i], v)``: atomic minimum; returns the old value.")
atomic_max = _marker("atomic_max", "``atomic_max(buf[i], v)``: atomic maximum; returns the old value.")

MATH_FUNCTIONS = ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "pow",
                  "fabs", "fmin", "fmax")
sqrt = _marker("sqrt", "square root (float)")
exp = _marker("exp", "e to the x (float)")
log = _marker("log", "natural logarithm (float)")
sin = _marker("sin", "sine (float)")
cos = _marker("cos", "cosine (float)")
tanh = _marker("tanh", "hyperbolic tangent (float)")
floor = _marker("floor", "round down, result keeps the float type")
ceil = _marker("ceil", "round up, result keeps the float type")
fabs = _marker("fabs", "absolute value")
fmin = _marker("fmin", "minimum of two values")
fmax = _marker("fmax", "maximum of two values")

pow = _marker("pow", "x to the power y (float)")  # noqa: A001
