"""LLVM set-up: initialisation, the machine code is made for, the
optimisation pipeline.

A ``MachineSpec`` names a triple, an LLVM CPU model and features.  The
default is this machine (its CPU name and features, so JIT code is tuned
for where it runs); the option ``cpu_model`` or ``$HPVM_CPU_MODEL`` picks
another model (``znver4``, ``sapphirerapids``, ``x86-64-v3``,
``neoverse-v2`` ...): code for it is always made, and run here only when
this machine has every feature the model implies.
"""
from __future__ import annotations

import ctypes.util
import functools
import os
import re
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

from hpvm.errors import TargetError

LLVM_LOCK = threading.RLock()
"""Held while LLVM objects are made or changed: llvmlite works in LLVM's
global context, which is not thread-safe."""

RUNTIME_LIBRARIES = ("m", "gcc_s")
"""Libraries whose symbols generated code may call: libm (f64 exp, tanh ...)
and libgcc (half-precision conversions on CPUs without F16C)."""

CPU_MODEL_VARIABLE = "HPVM_CPU_MODEL"
HOST = "host"

_X86_V2 = ("sse4.2", "popcnt", "ssse3", "cx16")
_X86_V3 = _X86_V2 + ("avx", "avx2", "fma", "bmi", "bmi2", "f16c", "movbe", "lzcnt")
_X86_V4 = _X86_V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_ICELAKE = _X86_V4 + ("avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
                      "avx512vpopcntdq", "avx512ifma", "gfni", "vaes", "vpclmulqdq")
_ZEN = ("sse4a",)
"""AMD's SSE4A: LLVM lowers some shuffles to its EXTRQ/INSERTQ for every
Zen model, so Zen code is not run on Intel machines (an illegal
instruction on an Emerald Rapids, which has every AVX-512 feature of Zen 4)."""
X86_MODEL_FEATURES = {
    "x86-64": (), "x86-64-v2": _X86_V2, "x86-64-v3": _X86_V3, "x86-64-v4": _X86_V4,
    "haswell": _X86_V3, "skylake": _X86_V3, "znver2": _X86_V3 + _ZEN, "znver3": _X86_V3 + _ZEN,
    "skylake-avx512": _X86_V4, "icelake-server": _ICELAKE,
    "znver4": _ICELAKE + _ZEN + ("avx512bf16",),
    "znver5": _ICELAKE + _ZEN + ("avx512bf16", "avx512vp2intersect", "avxvnni"),
    "sapphirerapids": _ICELAKE + ("avx512bf16", "avx512fp16", "avxvnni", "amx-tile",
                                  "amx-bf16", "amx-int8"),
}
"""The host features an x86 model's code may use, for the models whose code
is run here when the host has them; code for any other model is only made."""

AARCH64_MODELS = ("generic", "cortex-a72", "cortex-a76", "neoverse-n1", "neoverse-n2",
                  "neoverse-v1", "neoverse-v2", "apple-m1", "ampere1")
"""AArch64 models a ``cpu_model`` may name on any host: they imply the
triple ``aarch64-linux-gnu``."""
AARCH64_TRIPLE = "aarch64-linux-gnu"


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


@functools.cache
def host_features() -> frozenset[str]:
    """The features this machine has (``avx2``, ``avx512f`` ...)."""
    initialize()
    return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)


@dataclass(frozen=True)
class MachineSpec:
    """What code is made for: ``triple`` (None: this machine's), an LLVM
    CPU model and features ("" for the model's own)."""

    triple: str | None = None
    cpu: str = ""
    features: str = ""

    @classmethod
    def host(cls) -> "MachineSpec":
        triple, cpu, features = host_cpu()
        return cls(triple, cpu, features)

    @classmethod
    def for_model(cls, model: str | None, triple: str | None = None) -> "MachineSpec":
        """This machine for ``model`` None or ``"host"``; else CPU ``model``
        with its default features, for ``triple`` (default: this machine's,
        or aarch64 for the AArch64 models)."""
        if model in (None, "", HOST) and triple is None:
            return cls.host()
        host_triple = host_cpu()[0]
        if triple is None:
            on_arm = host_triple.startswith("aarch64")
            triple = AARCH64_TRIPLE if model in AARCH64_MODELS and not on_arm else host_triple
        return cls(triple, "" if model in (None, HOST) else model, "")

    @classmethod
    def from_options(cls, options: dict) -> "MachineSpec":
        """The model the option ``cpu_model`` names, else
        ``$HPVM_CPU_MODEL``, else the host; for the option ``triple``, if given."""
        return cls.for_model(options.get("cpu_model") or os.environ.get(CPU_MODEL_VARIABLE),
                             options.get("triple"))

    @property
    def is_host(self) -> bool:
        return self == MachineSpec.host()

    def why_not_runnable(self) -> str | None:
        """None when this machine can run code made for this spec; else why."""
        if self.is_host:
            return None
        triple = host_cpu()[0]
        if self.triple.split("-")[0] != triple.split("-")[0]:
            return f"it is code for {self.triple}, and this machine is {triple}"
        needed = X86_MODEL_FEATURES.get(self.cpu) if triple.startswith("x86_64") else None
        if needed is None:
            return f"hpvm does not know which features CPU model '{self.cpu}' implies"
        missing = sorted(set(needed) - host_features())
        if missing:
            return f"this machine lacks {', '.join(missing)}"
        return None

    def describe(self) -> str:
        return f"{self.cpu or 'generic'} ({self.triple})"

    def vector_bits(self) -> int:
        """The width of the vector registers code for this spec may use:
        512 with AVX-512, 256 with AVX, else 128 (SSE2 and AArch64's NEON,
        which every machine of those triples has)."""
        if not (self.triple or host_cpu()[0]).startswith("x86_64"):
            return 128
        features = (host_features() if self.is_host
                    else frozenset(X86_MODEL_FEATURES.get(self.cpu, ())))
        return 512 if "avx512f" in features else 256 if "avx" in features else 128

    def generic(self) -> "MachineSpec":
        """The same triple with the most widely runnable CPU model."""
        triple = self.triple or host_cpu()[0]
        return MachineSpec(triple, "x86-64" if triple.startswith("x86_64") else "", "")

    def create(self, opt_level: int = 3, jit: bool = False) -> llvm.TargetMachine:
        """An LLVM target machine; ``jit`` for code loaded into this process."""
        initialize()
        triple = self.triple or host_cpu()[0]
        try:
            target = llvm.Target.from_triple(triple)
        except RuntimeError as error:
            raise TargetError(f"cpu codegen: LLVM has no target for triple '{triple}': {error}") from None
        return target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt_level,
            reloc="default" if jit else "pic", codemodel="jitdefault" if jit else "default", jit=jit)


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int = 3,
             loop_vectorize: bool = True, slp_vectorize: bool = True) -> None:
    """Run LLVM's default pipeline at ``opt_level`` (with loop and SLP
    vectorisation from level 2 unless turned off) on ``module``, in place."""
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    if opt_level == 0:
        return
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    tuning.loop_vectorization = loop_vectorize and opt_level >= 2
    tuning.slp_vectorization = slp_vectorize and opt_level >= 2
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


class InvalidIR(TargetError):
    """LLVM IR that does not parse or verify: no other pipeline helps."""


def parse(llvm_ir: str, filename: str | None = None) -> llvm.ModuleRef:
    """Parse and verify textual LLVM IR.  A failure is a codegen bug, or,
    for IR read from ``filename`` (a saved artifact), a damaged file; the
    message gives LLVM's line and column."""
    initialize()
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as error:
        said = _located_llvm_error(str(error), filename or "<generated LLVM IR>")
        if filename is None:
            raise InvalidIR(f"cpu codegen produced invalid LLVM IR (a bug): {said}") from None
        raise InvalidIR(f"{said} (fix: the file is damaged: compile the program again)") from None
    return module


def _located_llvm_error(message: str, filename: str) -> str:
    """``file:line:col: what`` from LLVM's ``<string>:line:col: error: what``
    (whose source line and caret follow on other lines)."""
    match = re.search(r"<string>:(\d+):(\d+): error: (.*)", message)
    if match is None:
        return " ".join(line.strip() for line in message.splitlines() if line.strip())
    return f"{filename}:{match[1]}:{match[2]}: {match[3]}"
