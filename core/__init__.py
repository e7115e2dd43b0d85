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
from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from .hookspec import hookimpl
from .version import __version__

if TYPE_CHECKING:
    from .api import compile, load
    from .frontend import (
        Buffer, FrontendError, Graph, In, InOut, Out, Private, bool_, buffer, f16, f32, f64, i8,
        i16, i32, i64, kernel, parallel_loop, program, task, u8, u16, u32, u64,
    )
    from .ir.graph import FORMAT_VERSION
    from .runtime import Executable
    from .runtime.donation import donate

_LANGUAGE = ("program", "kernel", "Graph", "Buffer", "In", "Out", "InOut", "Private",
             "parallel_loop", "task", "buffer", "FrontendError", "bool_", "f16", "f32", "f64",
             "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
EXPORTS: dict[str, str] = {
    "compile": "api", "load": "api", "Executable": "runtime", "FORMAT_VERSION": "ir.graph",
    "donate": "runtime.donation",
    **{name: "frontend" for name in _LANGUAGE},
}
"""Public name -> the module of hpvm that defines it.  Each is imported on
first use (PEP 562), as are hpvm's subpackages (``hpvm.runtime`` ...):
``import hpvm`` and the ``hpvm`` command then start without importing the
compiler, the tuner and the front ends, which ``hpvm --help`` does not
need.  The names above, under TYPE_CHECKING, are the same for readers and
type checkers."""


def __getattr__(name: str):
    if name in EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{EXPORTS[name]}"), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})


__all__ = ["__version__", "hookimpl", *EXPORTS]
