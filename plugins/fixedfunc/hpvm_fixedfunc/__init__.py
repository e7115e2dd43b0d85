"""hpvm-fixedfunc: the hpvm target 'fixedfunc'.

Kernels recognised, by matching their program dependence graphs against
accelerator signatures, as an FFT, a Viterbi decoder, a GEMM or a FIR
filter run on that fixed-function accelerator (emulated: numpy, or torch
on a CUDA GPU).  See README.md.
"""
