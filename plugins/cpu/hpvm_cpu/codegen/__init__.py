"""LLVM code generator of the cpu target.

``compile_kernel_node(module, function_name, replication_rank, options)``
lowers a kernel function (core/ir/kernel.py) to LLVM IR with llvmlite, the
replication turned into a loop nest inside the generated code (loops the
kernel asks to unroll in full written as vector code: vector_loops.py),
optimises it at O3 for the host CPU (loop and SLP vectorisation) and
JIT-compiles it with MCJIT.  ``kernel_code`` makes the same machine code
without linking it, and may be called from several threads at once (the
target compiles a program's kernels in parallel that way).
``CompiledKernel.run(args, replication_sizes)`` runs it on numpy arrays,
in chunks of replication dimension 0 that the cores share
(jit.launch_chunks).
``emit_object(module, function_names, triple)`` makes object code for
cross-compilation (aarch64, riscv64, any LLVM triple).

The calling convention is in abi.py.  Generated code does not check
bounds: an out-of-range index is undefined behaviour, as in C.  Run a
kernel in the reference interpreter (hpvm.interp) to find such bugs.
Kernels with Barrier are refused (TargetError) for now; without barriers a
``local`` array is shared by the instances of one chunk (one thread's share
of dimension 0), which is the whole replication when ``threads`` is 1.
Run ``CompiledKernel.run`` writes the given buffers in place.
"""
from typing import TYPE_CHECKING

from hpvm.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .abi import ArgumentLayout, entry_symbol
    from .compiler import compile_kernel_node, kernel_code
    from .jit import CompiledKernel
    from .objects import CROSS_TRIPLES, emit_object

EXPORTS = {"ArgumentLayout": "abi", "entry_symbol": "abi", "compile_kernel_node": "compiler",
           "kernel_code": "compiler", "CompiledKernel": "jit", "CROSS_TRIPLES": "objects",
           "emit_object": "objects"}
"""Imported on first use: the compile worker runs pipeline.emit, which
needs none of them."""
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
__all__ = ["ArgumentLayout", "CROSS_TRIPLES", "CompiledKernel", "compile_kernel_node",
           "emit_object", "entry_symbol", "kernel_code"]
