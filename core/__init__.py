"""hpvm: one hierarchical dataflow-graph IR, many targets as plugins.

    import hpvm
    from hpvm.lang import Buffer, f32, parallel_loop

    @hpvm.program
    def scale(x: Buffer[f32, "N"], y: Buffer[f32, "N"], k: f32):
        for i in parallel_loop(N, ins=(x,), outs=(y,)):
            y[i] = k * x[i]

    exe = hpvm.compile(scale, targets=["gpu_opencl", "cpu"])
    out = exe(x=..., k=2.0)
"""
from .api import compile, load
from .frontend import (
    Buffer, FrontendError, Graph, In, InOut, Out, Private, bool_, buffer, f16, f32, f64, i8, i16,
    i32, i64, kernel, parallel_loop, program, task, u8, u16, u32, u64,
)
from .hookspec import hookimpl
from .ir.graph import FORMAT_VERSION
from .runtime import Executable
from .version import __version__

__all__ = [
    "FORMAT_VERSION", "__version__", "hookimpl", "compile", "load", "Executable",
    "program", "kernel", "Graph", "Buffer", "In", "Out", "InOut", "Private", "parallel_loop",
    "task", "buffer", "FrontendError", "bool_", "f16", "f32", "f64", "i8", "i16", "i32", "i64",
    "u8", "u16", "u32", "u64",
]
