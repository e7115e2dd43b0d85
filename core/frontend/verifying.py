"""Verification of the modules the front end makes."""
from __future__ import annotations

from ..ir.graph import Module


def verify_module(module: Module) -> None:
    """Run hpvm.ir.verify on ``module`` (raises VerificationError).  While
    the verifier cannot be imported (a partial checkout) this does nothing."""
    try:
        from ..ir.verify import verify
    except ImportError:
        return
    verify(module)
