"""``compile_kernel_node``: a kernel function to a CompiledKernel, through
the compile cache."""
from __future__ import annotations

import llvmlite.binding as llvm

from hpvm.errors import TargetError
from hpvm.ir.graph import Module

from .abi import ArgumentLayout
from .cache import cache_key, read_cached_ir, write_cached_ir
from .functions import build_module
from .jit import CompiledKernel
from .machine import LLVM_LOCK, host_cpu, optimize, parse, target_machine

DEFAULT_LANES, DEFAULT_ROWS = 16, 1
"""Lane strips (lanes.py): 16 instances (two 256-bit vectors of f32) of the
innermost replication dimension.  Blocks of several rows (``rows`` > 1)
are correct but LLVM does not yet keep their accumulators in registers
(slower at 512^3 sgemm), so they are off by default."""

DEFAULT_OPTIONS = {"opt_level": 3, "threads": None, "lanes": DEFAULT_LANES, "rows": DEFAULT_ROWS}
"""Options read here: ``opt_level`` (0-3, LLVM's pipeline level),
``threads`` (chunks per run; None: one per core), ``lanes`` (instances
per lane strip; 0 or 1: none) and ``rows`` (rows per block of strips; 1:
none).  Others are ignored but still part of the cache key."""

_compiled: dict[str, CompiledKernel] = {}


def compile_kernel_node(module: Module, function_name: str, replication_rank: int = 1,
                        options: dict | None = None) -> CompiledKernel:
    """Compile kernel ``function_name`` of ``module`` as a node replicated
    in ``replication_rank`` dimensions (0 counts as 1: one instance) for
    this CPU.  A second call with the same kernel, rank and options returns
    the compiled kernel from memory; a new process reads the optimised IR
    from the disk cache and only re-runs machine code generation."""
    options = {**DEFAULT_OPTIONS, **(options or {})}
    rank = _check_rank(function_name, replication_rank)
    if function_name not in module.functions:
        raise TargetError(f"cpu codegen: module '{module.name}' has no function '@{function_name}'")
    key = cache_key(module, function_name, rank, options, host_cpu())
    with LLVM_LOCK:
        if key not in _compiled:
            _compiled[key] = _compile(module, function_name, rank, options, key)
        return _compiled[key]


def _compile(module: Module, function_name: str, rank: int, options: dict, key: str) -> CompiledKernel:
    kernel = module.functions[function_name]
    layout = ArgumentLayout.of(kernel, rank)
    llvm_ir = read_cached_ir(key)
    from_cache = llvm_ir is not None
    if llvm_ir is None:
        llvm_ir = str(optimized_module(module, {function_name: rank}, options["opt_level"],
                                       lanes=options["lanes"], rows=options["rows"]))
        write_cached_ir(key, llvm_ir)
    return CompiledKernel(kernel, layout, llvm_ir, options["threads"], from_cache)


def optimized_module(module: Module, ranks: dict[str, int], opt_level: int = 3,
                     machine=None, lanes: int = DEFAULT_LANES,
                     rows: int = DEFAULT_ROWS) -> llvm.ModuleRef:
    """The optimised LLVM module of the node entries ``ranks`` names, for
    ``machine`` (default: the host JIT machine), with lane strips of
    ``rows`` x ``lanes`` instances where they pay (lanes.py)."""
    text, _ = build_module(module, ranks, module.name, lanes, rows)
    llvm_module = parse(text)
    optimize(llvm_module, machine or target_machine(jit=True, opt_level=opt_level), opt_level)
    return llvm_module


def _check_rank(function_name: str, rank: int) -> int:
    if not 0 <= rank <= 3:
        raise TargetError(f"cpu codegen: node running '@{function_name}' has replication rank "
                          f"{rank}; the IR allows 1 to 3 dimensions")
    return max(rank, 1)

