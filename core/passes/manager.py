"""Running a pipeline of passes over a module.

    pm = PassManager("dce,const-fold", verify_each=True)
    module = pm.run(module)
    pm.timings        # [("dce", 0.0012), ("const-fold", 0.0031)]

or in one call ``run_pipeline(module, "dce,const-fold")``.
"""
from __future__ import annotations

import time
from typing import Callable

from ..errors import Diagnostic, Location, VerificationError
from ..ir.graph import Module
from ..ir.verify import verify
from .errors import PassError
from .pipeline import PipelineStep, format_pipeline, resolve_steps
from .registry import get_pass


class PassManager:
    """Runs the passes of ``pipeline`` (text or a list of (name, options))
    in order.  With ``verify_each``, the module is verified before the first
    pass and after every pass, and a failure names the pass that broke it.
    ``verifier`` replaces hpvm.ir.verify.verify (it must raise
    VerificationError)."""

    def __init__(self, pipeline, verify_each: bool = False,
                 verifier: Callable[[Module], None] | None = None):
        self.steps: list[PipelineStep] = resolve_steps(pipeline)
        self.verify_each = verify_each
        self.verifier = verifier
        self.timings: list[tuple[str, float]] = []
        """(pass name, seconds) of the last run, in pipeline order."""

    def __str__(self) -> str:
        return format_pipeline(self.steps)

    def run(self, module: Module) -> Module:
        """The module after every pass; the input is left unchanged."""
        self.timings = []
        verify = self._verifier() if self.verify_each else None
        if verify is not None:
            _check(verify, module, None)
        for name, options in self.steps:
            start = time.perf_counter()
            try:
                result = get_pass(name).run(module, options)
            except Exception as err:
                err.add_note(f"while running pass '{name}'")
                raise
            self.timings.append((name, time.perf_counter() - start))
            if not isinstance(result, Module):
                raise PassError(Diagnostic(
                    Location(), f"pass '{name}' returned {type(result).__name__}, "
                    "not a Module", "a pass must return the new Module"))
            if verify is not None:
                _check(verify, result, name)
            module = result
        return module

    def _verifier(self) -> Callable[[Module], None]:
        if self.verifier is not None:
            return self.verifier
        return verify


def run_pipeline(module: Module, pipeline, verify_each: bool = False) -> Module:
    """``module`` transformed by ``pipeline`` (see PassManager)."""
    return PassManager(pipeline, verify_each=verify_each).run(module)


def _check(verify: Callable[[Module], None], module: Module, pass_name: str | None) -> None:
    try:
        verify(module)
    except VerificationError as err:
        if pass_name is None:
            prefix = "the input module is invalid (before any pass)"
            fix = "fix the module before running passes"
        else:
            prefix = f"pass '{pass_name}' produced an invalid module"
            fix = f"report a bug in pass '{pass_name}', or leave it out of the pipeline"
        diagnostics = [Diagnostic(d.location, f"{prefix}: {d.message}", d.fix or fix)
                       for d in err.diagnostics]
        raise VerificationError(diagnostics) from err
