"""The Python front end: the kernel language (``@program`` with
``parallel_loop`` / ``task``, ``@kernel`` helpers) and the graph builder
(``Graph``).  Both produce the same DFG IR (a Module)."""
from ..ir.draw import draw
from .api import (
    Buffer, In, InOut, Out, Private, atomic_add, atomic_max, atomic_min, barrier, bool_, buffer,
    ceil, cos, empty, exp, f16, f32, f64, fabs, floor, fmax, fmin, i8, i16, i32, i64, instance_count,
    instance_id, local_array, log, loop, parallel_loop, pow, private_array, reduce, sin, sqrt, tanh,
    task, u8, u16, u32, u64,
)
from .builder import Graph, NodeHandle, PortRef
from .compile import compile_program
from .errors import FrontendError
from .kernels import KernelDef, kernel
from .program import ProgramDef, program

__all__ = [
    "Buffer", "In", "InOut", "Out", "Private", "FrontendError", "Graph", "KernelDef", "NodeHandle",
    "PortRef", "ProgramDef", "compile_program", "draw",
    "atomic_add", "atomic_max", "atomic_min", "barrier", "bool_", "buffer", "ceil", "cos", "empty",
    "exp", "f16", "f32", "f64", "fabs", "floor", "fmax", "fmin", "i8", "i16", "i32", "i64",
    "instance_count", "instance_id", "kernel", "local_array", "log", "loop", "parallel_loop", "pow",
    "private_array", "program", "reduce", "sin", "sqrt", "tanh", "task", "u8", "u16", "u32", "u64",
]
