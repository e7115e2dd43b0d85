"""Verification of the modules the front end makes."""
from __future__ import annotations

from ..ir.graph import Module
from ..ir.verify import verify


def verify_module(module: Module) -> None:
    """Run hpvm.ir.verify on ``module`` (raises VerificationError)."""
    verify(module)
