"""Evaluating one sample of the space: measure it (compile, warm up, the
median of ``repeat`` runs, outputs checked against the reference
outputs) or estimate it (every used target's cost model, no run).

A sample runs in a worker process (hpvm.codegen.worker), never in the
tuner's: a sample that crashes its toolchain, hangs past the time-out or
computes a wrong result is an infeasible Outcome with the reason, and the
search goes on.  Compiles are cached on disk by the targets (the cpu
target's object-code cache, the OpenCL driver's), so samples that differ
only in run-time knobs do not compile again.

Every measured sample's outputs are compared with the reference outputs
(the interpreter's, computed once per tuning run, unless the caller gives
its own); the comparison costs little
next to a compile, and a pass or knob that breaks a program is then never
chosen.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HpvmError
from ..ir.text import parse_module
from ..options import resolve_compile_options
from ..registry import get_registry
from ..runtime import compile as compile_program, plan
from ..runtime.compiler import prepare_for_target
from ..runtime.sizes import node_sizes
from .search import Outcome
from .space import space

MODES = ("measure", "estimate")


@dataclass(frozen=True)
class SampleJob:
    """Everything a worker needs for one sample (it travels pickled)."""

    module_text: str
    targets: tuple[str, ...]
    values: dict
    inputs_path: str
    reference_path: str | None
    mode: str = "measure"
    repeat: int = 5
    objectives: tuple[str, ...] = ("seconds",)
    warmup: int = 1
    rtol: float = 1e-3
    atol: float = 1e-5
    reassociate: bool = False


_SPACES: dict = {}
_ARRAYS: dict = {}


def evaluate_sample(job: SampleJob) -> Outcome:
    """Run in a worker: realise the configuration, then measure or estimate
    it.  An HpvmError (a pass refusing, a target failing) is an infeasible
    Outcome with its message."""
    try:
        return _evaluate(job)
    except HpvmError as error:
        return Outcome(False, error=str(error).splitlines()[0] if str(error) else type(error).__name__)


def _evaluate(job: SampleJob) -> Outcome:
    design = _space_of(job)
    realised = design.realise(job.values)
    if job.mode == "estimate":
        inputs = load_arrays(job.inputs_path) if job.inputs_path else {}
        return _estimate(realised, job.targets, get_registry(), plan, inputs, job.objectives)
    run = _Run(job, realised)
    for _ in range(job.repeat):
        run.time_one()
    return run.outcome()


def evaluate_interleaved(jobs: list[SampleJob]) -> list[Outcome]:
    """Run in a worker: measure ``jobs`` together, one call of each in
    turn ``repeat`` times over, so that a machine slower for a while slows
    them all alike (the tuner's confirmation step: the winner against the
    defaults and the program as written)."""
    runs: list = []
    for job in jobs:
        try:
            runs.append(_Run(job, _space_of(job).realise(job.values)))
        except HpvmError as error:
            runs.append(Outcome(False, error=str(error).splitlines()[0]))
    for _ in range(max((job.repeat for job in jobs), default=0)):
        for index, run in enumerate(runs):
            if isinstance(run, _Run):
                try:
                    run.time_one()
                except HpvmError as error:
                    runs[index] = Outcome(False, error=str(error).splitlines()[0])
    return [run.outcome() if isinstance(run, _Run) else run for run in runs]


class _Run:
    """A sample compiled and warmed up, and the times of its calls."""

    def __init__(self, job: SampleJob, realised):
        self.job = job
        started = time.perf_counter()
        self.exe = compile_program(realised.module, targets=list(job.targets),
                                   options=realised.options)
        self.compile_seconds = time.perf_counter() - started
        self.inputs = load_arrays(job.inputs_path)
        self.outputs: dict = {}
        for _ in range(job.warmup):
            self.outputs = self.exe(**self.inputs)
        self.times: list[float] = []
        self.node_times: list[float] = []
        self.per_node: dict[str, list[float]] = {}

    def time_one(self) -> None:
        started = time.perf_counter()
        self.outputs = self.exe(**self.inputs)
        self.times.append(time.perf_counter() - started)
        report = self.exe.report()
        self.node_times.append(report.node_seconds)
        run: dict[str, float] = {}
        for record in report.node_records:
            run[record.node] = run.get(record.node, 0.0) + record.seconds
        for node, seconds in run.items():
            self.per_node.setdefault(node, []).append(seconds)

    def outcome(self) -> Outcome:
        if self.job.reference_path is not None:
            problem = _mismatch(self.outputs, load_arrays(self.job.reference_path),
                                self.job.rtol, self.job.atol)
            if problem:
                return Outcome(False, error=f"wrong result: {problem}")
        return Outcome(True, {"seconds": statistics.median(self.times),
                              "node_seconds": statistics.median(self.node_times),
                              "compile_seconds": self.compile_seconds},
                       rounds={"seconds": list(self.times), "node_seconds": list(self.node_times)},
                       profile={node: statistics.median(seconds)
                                for node, seconds in self.per_node.items()})


def _estimate(realised, targets, registry, plan, inputs: dict, objectives) -> Outcome:
    per_target = resolve_compile_options(realised.options, list(targets), registry, strict=False)
    placement = plan(realised.module, list(targets), registry, per_target)
    sizes = node_sizes(realised.module, inputs) if inputs else None
    total: dict[str, float] = {}
    for name in placement.used_targets:
        target = registry.target(name).target
        nodes = placement.nodes_of(name)
        options = per_target.get(name, {})
        prepared = prepare_for_target(realised.module, target, nodes, options)
        estimate = target.estimate(prepared, nodes, options, sizes=sizes)
        if estimate is None:
            return Outcome(False, error=f"target '{name}' has no cost model to estimate with "
                                        "(use --mode measure)")
        if estimate.get("feasible") is False:
            return Outcome(False, error=f"{name}: {estimate.get('reason', 'infeasible')}")
        for metric, value in estimate.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[metric] = total.get(metric, 0.0) + float(value)
    missing = [name for name in objectives if name not in total]
    if missing:
        return Outcome(False, error=f"the cost models of {', '.join(placement.used_targets)} "
                                    f"give no {', '.join(map(repr, missing))} (they give "
                                    f"{', '.join(sorted(total))}; fix: choose --objectives "
                                    "from those)")
    return Outcome(True, total)


def _space_of(job: SampleJob):
    key = (job.module_text, job.targets, job.reassociate)
    if key not in _SPACES:
        _SPACES.clear()
        _SPACES[key] = space(parse_module(job.module_text), list(job.targets),
                             reassociate=job.reassociate)
    return _SPACES[key]


def load_arrays(path: str) -> dict[str, Any]:
    """The arrays of an npz file (0-d arrays as scalars), read once per process."""
    if path not in _ARRAYS:
        with np.load(path, allow_pickle=False) as data:
            _ARRAYS[path] = {name: _scalar_or_array(data[name]) for name in data.files}
    return _ARRAYS[path]


def remember_arrays(path: str, arrays: dict[str, Any]) -> None:
    """Use ``arrays`` as the contents of ``path`` in this process (a Ray
    worker gets them from the object store, not from the file)."""
    _ARRAYS[path] = arrays


def _scalar_or_array(array: np.ndarray):
    return array.item() if array.ndim == 0 else array


def _mismatch(actual: dict, expected: dict, rtol: float, atol: float) -> str:
    """Why ``actual`` differs from the reference outputs, or ''."""
    for name, want in expected.items():
        if name not in actual:
            return f"output '{name}' is missing"
        got = np.asarray(actual[name])
        if got.shape != want.shape:
            return f"output '{name}' has shape {got.shape}, expected {want.shape}"
        scale = float(np.max(np.abs(want))) if want.size and want.dtype.kind == "f" else 1.0
        if not np.allclose(got, want, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=True):
            worst = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return f"output '{name}' differs from the reference by up to {worst:.3g}"
    return ""
