"""The accelerator signatures fixedfunc knows, in the order it tries them."""
from .base import Binding, Refusal, Signature
from .dot import FIR, GEMM
from .fft import FFT
from .viterbi import Viterbi

SIGNATURES: tuple[Signature, ...] = (FFT(), Viterbi(), GEMM(), FIR())
BY_NAME = {signature.name: signature for signature in SIGNATURES}

__all__ = ["BY_NAME", "Binding", "Refusal", "SIGNATURES", "Signature"]
