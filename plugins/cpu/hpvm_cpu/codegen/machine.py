"""LLVM set-up: initialisation, target machines, the optimisation pipeline.

The host machine uses the host CPU's name and features (AVX2 ... on x86),
so JIT code is tuned for the machine it runs on; cross targets name their
triple and optionally a CPU and features.
"""
from __future__ import annotations

import ctypes.util
import functools
import threading

import llvmlite.binding as llvm

from hpvm.errors import TargetError

LLVM_LOCK = threading.RLock()
"""Held while LLVM objects are made or changed: llvmlite works in LLVM's
global context, which is not thread-safe."""

RUNTIME_LIBRARIES = ("m", "gcc_s")
"""Libraries whose symbols generated code may call: libm (expf, tanhf ...)
and libgcc (half-precision conversions on CPUs without F16C)."""


@functools.cache
def initialize() -> None:
    """Initialise LLVM's targets once per process and make the runtime
    libraries' symbols visible to the JIT."""
    with LLVM_LOCK:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        for name in RUNTIME_LIBRARIES:
            path = ctypes.util.find_library(name)
            if path is not None:
                llvm.load_library_permanently(path)


@functools.cache
def host_cpu() -> tuple[str, str, str]:
    """(triple, cpu name, features) of this machine."""
    initialize()
    return (llvm.get_process_triple(), llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten())


def target_machine(triple: str | None = None, cpu: str | None = None,
                   features: str | None = None, opt_level: int = 3,
                   jit: bool = False) -> llvm.TargetMachine:
    """A target machine for ``triple`` (None: the host, with the host CPU
    and features unless given)."""
    initialize()
    if triple is None:
        triple, host_name, host_features = host_cpu()
        cpu = host_name if cpu is None else cpu
        features = host_features if features is None else features
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError as error:
        raise TargetError(f"cpu codegen: LLVM has no target for triple '{triple}': {error}") from None
    return target.create_target_machine(
        cpu=cpu or "", features=features or "", opt=opt_level,
        reloc="default" if jit else "pic", codemodel="jitdefault" if jit else "default", jit=jit)


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int = 3) -> None:
    """Run LLVM's default pipeline at ``opt_level`` with loop and SLP
    vectorisation on ``module``, in place."""
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    if opt_level == 0:
        return
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    tuning.loop_vectorization = opt_level >= 2
    tuning.slp_vectorization = opt_level >= 2
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


def parse(llvm_ir: str) -> llvm.ModuleRef:
    """Parse and verify textual LLVM IR; a failure is a codegen bug."""
    initialize()
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as error:
        raise TargetError(f"cpu codegen produced invalid LLVM IR (a bug): {error}") from None
    return module
