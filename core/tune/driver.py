"""The tuning loop: ``tune(program, targets, inputs, budget)`` builds the
space, asks the engine for samples, has the executor evaluate them, keeps
the record, and returns the best configuration.

    from hpvm.tune import tune
    result = tune(program, ["gpu_opencl", "cpu"], inputs, budget=100, record="tune.json")
    print(result.summary())
    exe = hpvm.compile(program, config=result.best)

The first sample is always the defaults (the program as written), so the
result can say how much tuning gained.  Then, unless the engine
enumerates the space, up to half of each phase's samples screen the
schedule forms around the default pipeline (warm_start.py), and the
engine goes on from there.  A sample proposed twice is
answered from the record without running it again.  At the end, the
``confirm`` best samples, the defaults, the program as written (where
a target's default schedule transforms it: ``Knob.as_written``) and the
defaults through the first target's default pipeline are measured again
with three times the runs, their calls interleaved, and the best of
those wins: a sample that was lucky once (the winner's curse of noisy
timings) is not chosen, and the winner is never one the defaults, the
program as written or the default pipeline beat.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..interp import Interpreter
from ..interp.trip_profile import with_profiled_trip_counts
from ..ir.text import print_module
from ..ir.verify import verify
from ..runtime.compiler import as_module
from ..runtime.inputs import validate_inputs
from .config import TuningConfig
from .evaluate import MODES, SampleJob
from .executors import LocalExecutor
from .record import Sample, TuningRecord
from .result import TuneResult
from .search import (
    BudgetSpent, Exhaustive, HyperMapperSearch, Outcome, RandomSearch, engine as make_engine,
    key_of,
)
from .space import PASS_PARAMETERS, Space, TuneError, space as make_space
from .warm_start import warm_start

OBJECTIVES = ("seconds", "node_seconds", "compile_seconds")
"""What a measured sample reports: the median whole call, the median sum of
the nodes' own times in the run report (host copies and the runtime left
out; on a cpu running nodes side by side, overlapping nodes count twice),
and the compile time; an estimate reports what the targets' cost models
give (``seconds`` at least)."""


def tune(program, targets, inputs: dict, budget: int = 100, *, passes=PASS_PARAMETERS,
         engine: str = "auto", mode: str = "measure", objectives=("seconds",), executor=None,
         timeout: float = 120.0, repeat: int = 5, confirm: int = 3, seed: int = 0,
         reference: dict | None = None, record: str | Path | None = None,
         resume: bool = False, progress: Callable[[TuningRecord, Sample], None] | None = None,
         registry=None, reassociate: bool = False) -> TuneResult:
    """Tune ``program`` on ``targets`` with ``inputs`` until the record
    holds ``budget`` samples (see the module docstring).  ``executor``: a LocalExecutor
    (default: one worker) or RayExecutor.  ``reference``: the outputs
    (name -> array) a measured sample must give; None: the interpreter
    computes them from ``inputs``, which takes long for large programs
    (give what a trusted implementation computes instead, numpy's
    ``a @ b`` for a matrix product).  ``record``: the JSON file kept
    after every batch (and read back with ``resume``).  ``progress`` is
    called after every sample.  ``reassociate``: parallel-reduce may fold
    float sums written as chains in another order (rfactor; the outputs
    round differently, within the tolerance every sample is checked
    against); the configuration says so."""
    if budget < 1:
        raise TuneError(f"a budget of {budget} samples tunes nothing (fix: give --budget 1 or "
                        "more)")
    if mode not in MODES:
        raise TuneError(f"no mode '{mode}' (fix: use one of {', '.join(MODES)})")
    objectives = list(objectives)
    if not objectives:
        raise TuneError(f"no objectives to tune for (fix: choose from {', '.join(OBJECTIVES)})")
    unknown = [name for name in objectives if name not in OBJECTIVES]
    if mode == "measure" and unknown:
        raise TuneError(f"a measured sample gives no {', '.join(map(repr, unknown))} (fix: "
                        f"choose --objectives from {', '.join(OBJECTIVES)})")
    module = as_module(program)
    verify(module)
    design = make_space(module, targets, passes=passes, registry=registry,
                        copies_seen="seconds" in objectives, reassociate=reassociate)
    if not len(design):
        raise TuneError(f"the program has nothing to tune on {','.join(design.targets)}: no "
                        "fusible nodes or loops, no target knobs, one node (fix: list more "
                        "targets or tune another program)")
    search = make_engine(engine, design, budget)
    history = _start_record(design, search.name, objectives, mode, record, resume)
    own_executor = executor is None
    executor = executor or LocalExecutor(1)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hpvm-tune-") as folder:
        inputs_path = str(Path(folder) / "inputs.npz")
        checked = validate_inputs(module.root_graph, inputs)
        np.savez(inputs_path, **{k: np.asarray(v) for k, v in checked.items()})
        reference_path = None
        if mode == "measure":
            reference_path = str(Path(folder) / "reference.npz")
            expected = Interpreter(module).run(**checked) if reference is None \
                else _checked_reference(module.root_graph, reference)
            np.savez(reference_path, **expected)
        evaluated = module
        if mode == "estimate" and checked:
            evaluated, profiled = with_profiled_trip_counts(module, checked)
            if profiled:
                notes.append(f"the cost models read the mean trip counts of {profiled} "
                             "data-dependent loop(s), profiled on the inputs by the interpreter")
        job = SampleJob(print_module(evaluated), tuple(design.targets), {}, inputs_path,
                        reference_path, mode, repeat, objectives=tuple(objectives),
                        reassociate=design.reassociate)
        evaluate = _Evaluation(design, history, job, executor, timeout, budget, record, progress)
        try:
            _search(engine, design, evaluate, budget, executor, seed, history, objectives, notes)
            if mode == "measure" and confirm:
                _confirm(design, history, job, executor, timeout, confirm)
                if record is not None:
                    history.save(record)
        finally:
            if own_executor:
                executor.close()
    best = history.best()
    config = None if best is None else TuningConfig(design.digest, list(design.targets),
                                                    best.values, dict(best.objectives),
                                                    design.reassociate)
    return TuneResult(design, history, config, notes)


def _checked_reference(graph, reference: dict) -> dict[str, np.ndarray]:
    """``reference`` as arrays, each named after an output of ``graph``."""
    outputs = [p.name for p in graph.params if p.direction in ("out", "inout")]
    unknown = sorted(set(reference) - set(outputs))
    if unknown:
        raise TuneError(f"the reference names {', '.join(map(repr, unknown))}, which the "
                        f"program does not output (fix: name its outputs: {', '.join(outputs)})")
    return {name: np.asarray(value) for name, value in reference.items()}


def _start_record(design, engine_name, objectives, mode, path, resume) -> TuningRecord:
    if resume:
        if path is None or not Path(path).exists():
            missing = "" if path is None else f"; {path} does not exist"
            raise TuneError(f"--resume needs the record of an earlier run (fix: give --output "
                            f"FILE of that run{missing})")
        history = TuningRecord.load(path)
        history.check_resumable(design, engine_name, objectives, mode, str(path))
        return history
    return TuningRecord.start(design, engine_name, objectives, mode)


def _search(engine_name, design, evaluate, budget, executor, seed, history, objectives, notes):
    """The defaults first, then each phase (see ``phases``) with its share
    of the budget."""
    batch = getattr(executor, "jobs", 1) or 1
    try:
        if key_of(design.defaults()) not in history.seen():
            evaluate([design.defaults()])  # the baseline, first
    except BudgetSpent:
        return
    plan = phases(design, budget - evaluate.spent)
    if len(plan) > 1:
        notes.append(f"partitioning: each of {', '.join(t for t, _, _, _ in plan[:-1])} was tuned "
                     f"alone first ({plan[0][3]} samples each), then the joint space")
    for _, sub, pins, share in plan:
        evaluate.stop_at = min(budget, evaluate.spent + share) if pins else budget
        search = make_engine(engine_name, sub, share)
        _phase(search, sub, pins, evaluate, batch, seed, history, objectives, notes)


def phases(design: Space, budget: int) -> list[tuple[str, Space, dict, int]]:
    """How the budget is spent: (name, sub-space, pinned values, samples).
    With a placement parameter, each target is first tuned alone (every
    node it claims placed on it, the other targets' knobs at their
    defaults), then the joint space, whose search starts from all those
    samples: the result is then never worse than the best single target
    found with the same engine."""
    targets = placed_targets(design)
    if not targets or budget < 2 * (len(targets) + 1):
        return [("joint", design, {}, budget)]
    share = budget // (len(targets) + 1)
    plan = []
    for target in targets:
        pins = placed_on(design, target)
        pins.update({p.name: p.default for p in design
                     if p.role == "knob" and p.subject[0] != target})
        plan.append((target, design.pinned(pins), pins, share))
    plan.append(("joint", design, {}, budget - share * len(targets)))
    return plan


def placed_targets(design: Space) -> list[str]:
    """The targets a placement parameter can choose (none: placement is
    not tuned)."""
    placement = [p for p in design if p.role == "placement"]
    return [t for t in design.targets if any(t in p.values for p in placement)]


def placed_on(design: Space, target: str) -> dict:
    """The placement values that put every node ``target`` may run on it
    (the others at their defaults)."""
    return {p.name: target if target in p.values else p.default
            for p in design if p.role == "placement"}


def _phase(search, sub, pins, evaluate, batch, seed, history, objectives, notes) -> None:
    def run(engine) -> None:
        seen = _seen_in(sub, pins, history)
        engine.run(sub, call, evaluate.stop_at - evaluate.spent, batch, seed, seen, objectives)

    call = (lambda configurations: evaluate([{**c, **pins} for c in configurations])) \
        if pins else evaluate
    try:
        if not isinstance(search, Exhaustive):
            warm_start(sub, call, (evaluate.stop_at - evaluate.spent) // 2, batch, seed,
                       _seen_in(sub, pins, history), notes, history.first_profile(),
                       objectives[0])
        run(search)
    except BudgetSpent:
        return
    except Exception as error:  # HyperMapper ends in an exception when it runs out of points
        if not isinstance(search, HyperMapperSearch):
            raise
        notes.append(f"HyperMapper stopped after {evaluate.spent} samples "
                     f"({type(error).__name__}: {error}); random search used the rest")
    except SystemExit:  # HyperMapper's own way of failing
        notes.append(f"HyperMapper stopped after {evaluate.spent} samples; random search "
                     "used the rest")
    if evaluate.spent < evaluate.stop_at:
        try:
            run(RandomSearch())
        except BudgetSpent:
            pass


def _seen_in(sub: Space, pins: dict, history: TuningRecord) -> dict[str, Outcome]:
    """The recorded outcomes of configurations with these pins, keyed by
    their values in ``sub``."""
    names = [p.name for p in sub]
    seen = {}
    for sample in history.samples:
        if all(key_of(sample.values.get(k)) == key_of(v) for k, v in pins.items()):
            seen[key_of({k: sample.values[k] for k in names if k in sample.values})] = \
                sample.outcome
    return seen


def _confirm(design, history, job, executor, timeout, count) -> None:
    """Measure the ``count`` best distinct samples, the defaults, the
    program as written (where a target's default schedule transforms it)
    and, where placement is tuned, the best sample with every node on each
    single target again, with three times the runs, their calls
    interleaved where the executor can (``evaluate_together``), into
    ``history.confirmations``: the result is then chosen by the same
    measurement from among the best of each target alone as well, and is
    never one the defaults or the program as written beat."""
    name = history.objectives[0]
    ranked = sorted(history.feasible(), key=lambda s: s.objectives[name])
    chosen = {key_of(s.values): s.values for s in ranked[:count]}
    for values in (design.defaults(), design.as_written(), design.default_pipeline()):
        if values is not None:
            chosen.setdefault(key_of(values), values)
    for target in placed_targets(design):
        pins = placed_on(design, target)
        alone = [s for s in ranked if all(key_of(s.values.get(k)) == key_of(v)
                                          for k, v in pins.items())]
        if alone:
            chosen.setdefault(key_of(alone[0].values), alone[0].values)
    indices = {key_of(s.values): s.index for s in history.samples}
    jobs = [SampleJob(**{**job.__dict__, "values": values, "repeat": 3 * job.repeat})
            for values in chosen.values()]
    together = getattr(executor, "evaluate_together", executor.evaluate)
    outcomes = together(jobs, 3 * timeout)
    history.confirmations = [Sample(indices.get(key, -1), values, o.feasible,
                                    dict(o.objectives), o.error, rounds=dict(o.rounds))
                             for (key, values), o in zip(chosen.items(), outcomes)]
    history.baseline = key_of(design.defaults())


class _Evaluation:
    """The ``evaluate`` callback engines call: runs new configurations,
    answers repeats from the record, keeps the record on disk, and stops
    the engine at the budget."""

    def __init__(self, design, history, job, executor, timeout, budget, path, progress):
        self.design, self.history, self.job = design, history, job
        self.executor, self.timeout, self.budget = executor, timeout, budget
        self.path, self.progress = path, progress
        self.spent = len(history.samples)  # a resumed run counts what it recorded
        self.stop_at = budget  # the end of the current phase
        self.repeats = 0

    def __call__(self, configurations: list[dict]) -> list[Outcome]:
        if self.spent >= self.stop_at or self.repeats > 10 * self.budget:
            raise BudgetSpent()
        known = self.history.seen()
        fresh: dict[str, dict] = {}
        keys = []
        for values in configurations:
            values = self.design.checked(values)
            key = key_of(values)
            keys.append(key)
            if key in known or key in fresh:
                self.repeats += 1
            elif len(fresh) < self.stop_at - self.spent:
                fresh[key] = values
        started = time.perf_counter()
        jobs = [SampleJob(**{**self.job.__dict__, "values": values}) for values in fresh.values()]
        results = self.executor.evaluate(jobs, self.timeout) if jobs else []
        wall = (time.perf_counter() - started) / max(len(jobs), 1)
        for (key, values), outcome in zip(fresh.items(), results):
            known[key] = outcome
            sample = self.history.add(values, outcome, wall)
            self.spent += 1
            if self.progress is not None:
                self.progress(self.history, sample)
        if self.path is not None and fresh:
            self.history.save(self.path)
        missing = Outcome(False, error="not evaluated: the budget is spent")
        return [known.get(key, missing) for key in keys]
