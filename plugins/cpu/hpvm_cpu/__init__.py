"""hpvm-cpu: the hpvm target 'cpu'.

Multicore CPUs through LLVM (llvmlite): x86-64, AArch64, RISC-V.
"""
