"""The 'cpu' target: multicore CPUs through LLVM (llvmlite): x86-64, AArch64, RISC-V."""
from hpvm.target import Availability, Target


class CpuTarget(Target):
    name = "cpu"
    description = "multicore CPUs through LLVM (llvmlite): x86-64, AArch64, RISC-V"

    def availability(self) -> Availability:
        return Availability.no("no LLVM code generator yet: the code generator lands with issue #4")
