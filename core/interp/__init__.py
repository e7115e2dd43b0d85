"""The reference interpreter (numpy): the golden model every target is
tested against.

    from hpvm.interp import run_module, Interpreter, run_kernel
    outputs = run_module(module, {"img": img, "k": 3})

Kernels run SIMT: one evaluation of the body covers every instance of a
node (see kernel_eval); graphs run node by node with buffers passed by value
(see graph_exec).
"""
from .api import Interpreter, run_kernel, run_module
from .target import InterpTarget

__all__ = ["Interpreter", "run_kernel", "run_module", "InterpTarget"]
