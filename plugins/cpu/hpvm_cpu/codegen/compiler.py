"""``compile_kernel_node``: a kernel function to a CompiledKernel, through
the compile cache and the compile worker (pipeline.py)."""
from __future__ import annotations

import hashlib

from hpvm.errors import TargetError
from hpvm.ir.graph import Module

from .abi import ArgumentLayout
from .cache import cache_key, read_cached, write_cached
from .functions import build_module
from .jit import CompiledKernel
from .machine import LLVM_LOCK, MachineSpec
from .pipeline import MachineCode, Pipeline, compile_llvm_ir

DEFAULT_LANES, DEFAULT_ROWS = 16, 1
"""Lane strips (lanes.py): 16 instances (two 256-bit vectors of f32) of the
innermost replication dimension.  Blocks of several rows (``rows`` > 1)
are correct but LLVM does not yet keep their accumulators in registers
(slower at 512^3 sgemm), so they are off by default."""

DEFAULT_OPTIONS = {"opt_level": 3, "threads": None, "lanes": DEFAULT_LANES, "rows": DEFAULT_ROWS,
                   "cpu_model": None, "vector_width": None}
"""Options read here: ``opt_level`` (0-3, LLVM's pipeline level),
``threads`` (threads per run, jit.launch_chunks), ``lanes`` (instances
per lane strip; 0 or 1: none), ``rows`` (rows per block of strips; 1:
none), ``cpu_model`` (machine.py; None: ``$HPVM_CPU_MODEL`` or the
host) and ``vector_width`` (bits of the vectors LLVM should prefer;
None: the CPU model's choice).  Others are ignored but still part of the
cache key."""

_compiled: dict[str, CompiledKernel] = {}


def compile_kernel_node(module: Module, function_name: str, replication_rank: int = 1,
                        options: dict | None = None) -> CompiledKernel:
    """Compile kernel ``function_name`` of ``module`` as a node replicated
    in ``replication_rank`` dimensions (0 counts as 1: one instance) for
    this CPU.  A second call with the same kernel, rank and options returns
    the compiled kernel from memory; a new process reads the machine code
    from the disk cache."""
    options = {**DEFAULT_OPTIONS, **(options or {})}
    key, code, from_cache = _machine_code(module, function_name, replication_rank, options)
    with LLVM_LOCK:
        if key not in _compiled:
            kernel = module.functions[function_name]
            layout = ArgumentLayout.of(kernel, _check_rank(function_name, replication_rank))
            _compiled[key] = CompiledKernel(kernel, layout, code, options["threads"], from_cache,
                                            options["lanes"])
        return _compiled[key]


def kernel_code(module: Module, function_name: str, replication_rank: int = 1,
                options: dict | None = None) -> MachineCode:
    """The machine code ``compile_kernel_node`` links, without linking it:
    several threads may call this at once, each compiling in a worker of
    the pool (hpvm.codegen.worker), which is how a target compiles a
    program's kernels in parallel.  Through the disk cache."""
    options = {**DEFAULT_OPTIONS, **(options or {})}
    return _machine_code(module, function_name, replication_rank, options)[1]


def _machine_code(module: Module, function_name: str, replication_rank: int,
                  options: dict) -> tuple[str, MachineCode, bool]:
    """(cache key, machine code, whether it came from the disk cache)."""
    machine = MachineSpec.from_options(options)
    reason = machine.why_not_runnable()
    if reason is not None:
        raise TargetError(f"cpu: code for CPU model {machine.describe()} cannot run here: "
                          f"{reason} (fix: choose a cpu_model this machine can run, or "
                          "compile with the option 'triple' to get object code)")
    rank = _check_rank(function_name, replication_rank)
    if function_name not in module.functions:
        raise TargetError(f"cpu codegen: module '{module.name}' has no function '@{function_name}'")
    key = cache_key(module, function_name, rank, options, machine)
    if key in _compiled:
        return key, _compiled[key].code, True
    code = read_cached(key)
    if code is not None:
        return key, code, True
    code = kernel_machine_code(module, {function_name: rank}, options, machine)
    write_cached(key, code)
    write_cached(_load_key(machine, code.llvm_ir), code)
    return key, code, False


def kernel_machine_code(module: Module, ranks: dict[str, int], options: dict,
                        machine: MachineSpec, jit: bool = True) -> MachineCode:
    """Machine code for the node entries ``ranks`` names (function ->
    replication rank), made in the compile worker."""
    options = {**DEFAULT_OPTIONS, **options}
    bits = machine.vector_bits()
    if options["vector_width"]:
        bits = min(bits, options["vector_width"])
    text, _ = build_module(module, ranks, module.name, options["lanes"], options["rows"],
                           options["vector_width"], bits)
    what = ", ".join(f"kernel '@{name}'" for name in ranks)
    return compile_llvm_ir(text, machine, what, options["opt_level"], jit)


def load_optimised_ir(kernel_name: str, llvm_ir: str, filename: str) -> MachineCode:
    """Machine code for this machine from IR an artifact saved (already
    optimised: only code generation runs), through the disk cache."""
    machine = MachineSpec.host()
    key = _load_key(machine, llvm_ir)
    code = read_cached(key)
    if code is None:
        code = compile_llvm_ir(llvm_ir, machine, f"kernel '@{kernel_name}'",
                               pipelines=[Pipeline(run_passes=False)], filename=filename)
        write_cached(key, code)
    return code


def _load_key(machine: MachineSpec, llvm_ir: str) -> str:
    """The cache key of machine code for ``machine`` from optimised IR: the
    code a compile made is stored under it too, so that loading what was
    just compiled and saved reads it back instead of generating it again."""
    return hashlib.sha256(f"load {machine!r}\n{llvm_ir}".encode()).hexdigest()


def _check_rank(function_name: str, rank: int) -> int:
    if not 0 <= rank <= 3:
        raise TargetError(f"cpu codegen: node running '@{function_name}' has replication rank "
                          f"{rank}; the IR allows 1 to 3 dimensions")
    return max(rank, 1)
