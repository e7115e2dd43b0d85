"""Running configurations for real: compile a module with a knob
configuration applied, run it on the tuning inputs, time it.

The inputs are staged on the devices once per configuration
(``Executable.stage``), as a deployed model's would stream in while the
previous batch computes: what is timed is the computation and the copy of
the results back, the part approximation changes.

A configuration is a dict node -> knob (nodes left out are exact).  Each
distinct configuration is compiled and run once per tuning run (results
are kept), and ``runs`` counts the empirical evaluations.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from ...errors import HpvmError
from ...ir.graph import Module
from ...passes.approximate import EXACT, apply_knobs
from ...runtime import compile as compile_program
from .qos import ApproxError


def canonical(config: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A configuration as a hashable key, exact nodes left out."""
    return tuple(sorted((node, knob) for node, knob in config.items() if knob != EXACT))


@dataclass(frozen=True)
class Measurement:
    outputs: np.ndarray
    seconds: float


class Runner:
    """Runs configurations of ``module`` on ``targets`` with ``inputs``;
    ``output`` names the output scored (default: the first)."""

    def __init__(self, module: Module, targets: list[str], inputs: dict, options=None,
                 output: str | None = None, repeat: int = 5):
        self.module, self.targets, self.inputs = module, list(targets), inputs
        self.options = dict(options or {})
        self.output = output
        self.repeat = repeat
        self.runs = 0
        self._done: dict[tuple, Measurement] = {}

    def variant(self, config: dict[str, str]) -> Module:
        key = canonical(config)
        return apply_knobs(self.module, dict(key)) if key else self.module

    def measure(self, config: dict[str, str]) -> Measurement:
        key = canonical(config)
        if key not in self._done:
            self._done[key] = self._run(self.variant(config))
            self.runs += 1
        return self._done[key]

    def remeasure_baseline(self) -> Measurement:
        """Time the exact program again and keep the faster of its two
        timings (the first run of a tuning pays for warming up)."""
        first = self.measure({})
        again = self._run(self.module)
        self.runs += 1
        best = Measurement(first.outputs, min(first.seconds, again.seconds))
        self._done[()] = best
        return best

    def _run(self, module: Module) -> Measurement:
        exe = compile_program(module, self.targets, self.options)
        try:
            staged = exe.stage(**self.inputs)
            outputs = exe(**staged)  # the warm-up run
            times = []
            for _ in range(self.repeat):
                started = time.perf_counter()
                exe(**staged)
                times.append(time.perf_counter() - started)
        except HpvmError as error:
            raise ApproxError(f"running the program on {','.join(self.targets)} failed: "
                              f"{error}") from None
        finally:
            exe.close()
        name = self.output or next(iter(outputs))
        if name not in outputs:
            raise ApproxError(f"the program has no output '{name}' (its outputs: "
                              f"{', '.join(outputs)})")
        return Measurement(np.asarray(outputs[name]), statistics.median(times))
