"""LLVM runs in the compile worker (hpvm.codegen.worker), with a ladder of
safer pipelines when one kills or hangs LLVM.

llvmlite's LLVM is built with assertions, and its newer passes still have
bugs that abort on some inputs and CPU models (the loop vectoriser's
"VPlan cost model and legacy cost model disagreed").  The code generator
builds LLVM IR in Python, then hands it to ``emit`` in the worker, which
optimises it and makes object code; this process only links that object
code.  When LLVM dies, hangs or fails, the next pipeline of
``fallback_pipelines`` is tried, and a note says what was done.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from hpvm.codegen.worker import ToolchainCrash, run_isolated
from hpvm.errors import TargetError

from .machine import LLVM_LOCK, InvalidIR, MachineSpec, optimize, parse

COMPILE_TIMEOUT = 300.0
"""Seconds LLVM may take on one node before it counts as hung."""
EMITTER = "hpvm_cpu.codegen.pipeline:emit"
"""What the worker runs on each pipeline (``emit`` below)."""


@dataclass(frozen=True)
class Pipeline:
    """How LLVM is run: optimisation level, vectorisers, whether the CPU
    model gives way to a generic one, and whether the IR passes run at all
    (not for IR that was optimised before: code generation only)."""

    opt_level: int = 3
    loop_vectorize: bool = True
    slp_vectorize: bool = True
    generic_cpu: bool = False
    run_passes: bool = True

    def describe(self, machine: MachineSpec) -> str:
        parts = [f"O{self.opt_level}" if self.run_passes else f"code generation at O{self.opt_level}"]
        if self.opt_level >= 2 and not self.loop_vectorize:
            parts.append("no loop vectoriser" if self.slp_vectorize else "no vectorisers")
        target = machine.generic() if self.generic_cpu else machine
        return f"{', '.join(parts)} for {target.cpu or 'generic'}"


def fallback_pipelines(opt_level: int) -> list[Pipeline]:
    """The pipeline asked for, then ever safer ones."""
    first = Pipeline(opt_level)
    if opt_level < 2:
        return [first, replace(first, generic_cpu=True)]
    return [first, replace(first, loop_vectorize=False),
            replace(first, loop_vectorize=False, slp_vectorize=False),
            replace(first, loop_vectorize=False, slp_vectorize=False, generic_cpu=True)]


@dataclass(frozen=True)
class MachineCode:
    """What ``compile_llvm_ir`` made: the optimised IR, the object code,
    the pipeline used and notes on any pipeline that failed first."""

    llvm_ir: str
    object_code: bytes
    pipeline: str
    notes: tuple[str, ...] = ()


def compile_llvm_ir(llvm_ir: str, machine: MachineSpec, what: str, opt_level: int = 3,
                    jit: bool = True, pipelines: list[Pipeline] | None = None,
                    filename: str | None = None) -> MachineCode:
    """Optimise ``llvm_ir`` and make object code for ``machine`` in the
    compile worker, down the ladder of ``pipelines`` (default:
    ``fallback_pipelines(opt_level)``) until one works.  ``what`` names the
    code in messages (``kernel '@blur'``); ``filename`` the file the IR
    came from, if any.  Raises TargetError naming every pipeline and how it
    failed when none works; IR that does not parse fails at once."""
    failures: list[str] = []
    for pipeline in pipelines or fallback_pipelines(opt_level):
        described = pipeline.describe(machine)
        try:
            optimised, object_code = run_isolated(
                EMITTER, (llvm_ir, machine, pipeline, jit, filename), COMPILE_TIMEOUT)
        except InvalidIR:  # no other pipeline parses it better
            raise
        except TargetError as error:
            kind = "LLVM " if isinstance(error, ToolchainCrash) else ""
            failures.append(f"{kind}{error} (pipeline: {described})")
            continue
        notes = tuple(f"{what}: {failure}; compiled with {described} instead"
                      for failure in failures)
        return MachineCode(optimised, object_code, described, notes)
    raise TargetError(f"cpu: LLVM could not compile {what}: " + "; then ".join(failures)
                      + " (fix: run this node on another target, or report the LLVM bug "
                      "with the kernel's text form)")


def emit(llvm_ir: str, machine: MachineSpec, pipeline: Pipeline, jit: bool,
         filename: str | None = None) -> tuple[str, bytes]:
    """Run in the worker: ``(optimised IR, object code)`` of ``llvm_ir``
    (read from ``filename``, if given, for messages)."""
    spec = machine.generic() if pipeline.generic_cpu else machine
    with LLVM_LOCK:
        target = spec.create(pipeline.opt_level, jit=jit)
        module = parse(llvm_ir, filename)
        optimize(module, target, pipeline.opt_level if pipeline.run_passes else 0,
                 pipeline.loop_vectorize, pipeline.slp_vectorize)
        return str(module), target.emit_object(module)
