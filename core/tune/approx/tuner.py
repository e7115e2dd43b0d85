"""``approx_tune``: accuracy-aware approximation tuning (ApproxTuner).

    from hpvm.tune.approx import approx_tune, accuracy
    result = approx_tune(model, ["aten"], {"x": images}, accuracy(labels), loss=1.0)
    print(result.curve.format())
    exe = result.executable()          # the curve ships with it: exe.use(k)

Predictive tuning (the default) runs the program once per knob of each
node (the profile), searches thousands of configurations on the
predictions of an error-composition model, then runs the predicted front
for real and keeps the configurations that truly meet the goal; when most
of them miss it, it runs half as many more, chosen that much further
inside the goal.  The profile's own runs that meet the goal are
candidates for the curve as well.
Empirical tuning runs every configuration the search visits.  Either way
the curve holds measured QoS and speedups only.
"""
from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...errors import HpvmError
from ...ir.verify import verify
from ...passes.calibrate import calibrate
from ...registry import get_registry
from ...runtime import compile as compile_program
from ...runtime.compiler import as_module
from ...runtime.inputs import validate_inputs
from .curve import ApproxCurve, ApproxPoint
from .explore import Point, explore, pareto
from .knobs import EVERY, TECHNIQUES, approximable_nodes, knob_choices, precisions_offered
from .measure import Runner, canonical
from .predict import MODELS, profile
from .qos import ApproxError, Goal, QoS

MODES = ("predictive", "empirical")
DEFAULT_BUDGET = {"predictive": 4000, "empirical": 60}
"""Configurations the search evaluates: predicted ones cost nothing."""


@dataclass
class ApproxResult:
    curve: ApproxCurve
    mode: str
    empirical_runs: int
    searched: int
    """Configurations the search evaluated (predicted, in predictive mode)."""
    agreement: dict = field(default_factory=dict)
    """Predictive mode: how predicted and measured QoS of the validated
    configurations compare (mean_abs_error, correlation, kept, validated)."""
    module: object = None
    options: dict = field(default_factory=dict)

    def summary(self) -> str:
        lines = [self.curve.format(), ""]
        best = max(self.curve.points, key=lambda p: p.speedup)
        lines.append(f"{self.mode} tuning: {self.searched} configurations searched, "
                     f"{self.empirical_runs} run for real; best speedup {best.speedup:.2f}x "
                     f"within {self.curve.goal}")
        if self.agreement:
            a = self.agreement
            lines.append(f"predicted vs measured {self.curve.qos_name}: mean |error| "
                         f"{a['mean_abs_error']:.3g}, correlation {a['correlation']:.2f}; "
                         f"{a['kept']} of {a['validated']} predicted configurations met the goal")
        lines.extend(self.curve.notes)
        return "\n".join(lines)

    def executable(self, **compile_options):
        """The exact program compiled for the curve's targets, with the
        curve attached (``configurations()`` / ``use()``)."""
        exe = compile_program(self.module, self.curve.targets,
                              {**self.options, **compile_options})
        exe.attach_approximations(self.curve)
        return exe


def approx_tune(program, targets, inputs: dict, qos: QoS, *, loss: float | None = None,
                minimum: float | None = None, mode: str = "predictive", model: str = "pi2",
                budget: int | None = None, validate: int = 12, techniques=TECHNIQUES,
                every=EVERY, options: dict | None = None, output: str | None = None,
                repeat: int = 5, seed: int = 0,
                progress: Callable[[str, int, int], None] | None = None) -> ApproxResult:
    """Tune the approximation knobs of ``program``'s tensor ops on
    ``targets`` so that ``qos`` meets the goal (``loss`` below the exact
    program's score, or at least ``minimum``) on ``inputs``; see the
    module docstring.  ``progress(label, done, total)`` hears of every run
    (``total`` is the number of runs planned)."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    _check_choice("mode", mode, MODES)
    _check_choice("model", model, MODELS)
    goal = Goal(loss, minimum)
    module = as_module(program)
    verify(module)
    try:
        validate_inputs(module.root_graph, inputs)
    except HpvmError as error:
        raise ApproxError(f"the tuning data does not fit the program: {error}") from None
    usable = get_registry().usable(targets)  # an unknown name raises TargetError
    if "int8" in techniques:  # INT8 scales from the tuning data (the calibrate pass)
        module = calibrate(module, inputs)
    choices = {node: knob_choices(module, node, techniques, every, usable)
               for node in approximable_nodes(module)}
    if not any(len(knobs) > 1 for knobs in choices.values()):
        raise ApproxError("the program has no node the approximation knobs apply to: no "
                          "tensor op (conv2d, gemm, matmul, pools, batchnorm, elementwise on "
                          "floats) and no kernel node whose instances can be perforated; fix: "
                          "tune a tensor program (an ONNX model or graph-builder ops) or a "
                          "kernel program whose nodes write their outputs at their own ids")
    budget = budget or DEFAULT_BUDGET[mode]
    profiled = len(precisions_offered(choices)) + sum(len(k) - 1 for k in choices.values())
    runs = 1 + profiled + validate + validate // 2 if mode == "predictive" else budget
    steps = _Steps(progress, runs)
    runner = Runner(module, targets, inputs, options, output, repeat)
    baseline = runner.measure({})
    baseline_score = qos.score(baseline.outputs, baseline.outputs)
    threshold = goal.threshold(baseline_score)
    curve = ApproxCurve([ApproxPoint({}, baseline_score, 1.0, baseline.seconds)], qos.name,
                        qos.unit, baseline_score, goal.describe(qos), targets, machine(),
                        input_shapes={name: list(np.shape(value)) for name, value in inputs.items()})
    result = ApproxResult(curve, mode, 0, 1, module=module, options=dict(options or {}))
    if goal.loss == 0:
        curve.notes.append("a QoS loss of 0 admits only the exact program")
    elif mode == "predictive":
        _predictive(result, runner, choices, qos, threshold, model, budget, validate, seed,
                    steps)
    else:
        _empirical(result, runner, choices, qos, threshold, budget, seed, steps)
    if len(curve.points) > 1 or mode == "empirical":
        _rebase(curve, runner.remeasure_baseline().seconds)
    result.empirical_runs = runner.runs
    if baseline_score < threshold:
        curve.notes.append(f"the exact program itself scores {baseline_score:.4g}, below the "
                           f"goal {threshold:.4g}")
    return result


def _predictive(result, runner, choices, qos, threshold, model, budget, validate, seed,
                progress) -> None:
    known = profile(runner, choices, qos, progress)

    def predicted(config):
        return known.predict(config, qos, model)

    points = explore(choices, predicted, threshold, budget, seed)
    result.searched = len(points)
    measured, errors, done = [], [], set()
    margin = 0.0
    for last, round_size in ((False, validate), (True, validate // 2)):
        candidates = _candidates([p for p in points if p.score >= threshold + margin
                                  and canonical(p.config) not in done], round_size)
        for candidate in candidates:
            done.add(canonical(candidate.config))
            run = runner.measure(candidate.config)
            score = qos.score(run.outputs, known.baseline.outputs)
            errors.append((candidate.score, score))
            progress(f"validated {len(errors)}")
            measured.append((Point(candidate.config, score, run.seconds), candidate))
        optimism = float(np.mean([p - m for p, m in errors])) if errors else 0.0
        met = sum(m.score >= threshold for m, _ in measured)
        if last or met * 2 >= len(measured) or optimism <= 0:
            break
        # Most predictions were too hopeful: validate more, that much
        # further inside the goal (at most as far as the baseline).
        margin = min(optimism, max(known.baseline_score - threshold, 0.0))
        result.curve.notes.append(f"predictions were {optimism:.3g} too high on average; "
                                  f"validated more with that margin")
    kept = [(m, c) for m, c in measured if m.score >= threshold]
    result.agreement = _agreement(errors, len(kept))
    # What profiling measured is as real as what was validated: a
    # configuration it ran that meets the goal (all nodes in FP16, say)
    # is never lost to a wrong prediction.
    profiled = [p for p in known.runs if p.score >= threshold
                and canonical(p.config) not in done]
    _fill_curve(result.curve, [m for m, _ in kept] + profiled, {id(m): c for m, c in kept})


def _empirical(result, runner, choices, qos, threshold, budget, seed, progress) -> None:
    reference = runner.measure({}).outputs

    def run(config):
        measured = runner.measure(config)
        return qos.score(measured.outputs, reference), measured.seconds

    def step(point: Point) -> None:
        progress(f"{len(point.config)} knobs: {qos.name} {point.score:.4g}")

    points = explore(choices, run, threshold, budget, seed, step)
    result.searched = len(points)
    _fill_curve(result.curve, [p for p in points if p.score >= threshold and p.config], {})


def _fill_curve(curve: ApproxCurve, measured: list[Point], predictions: dict) -> None:
    """The curve: the exact program, then the measured Pareto front of the
    acceptable configurations that are faster."""
    baseline = curve.points[0]
    faster = [p for p in measured if p.seconds < baseline.seconds]
    for point in reversed(pareto(faster)):  # slowest (best QoS) first
        guess = predictions.get(id(point))
        curve.points.append(ApproxPoint(
            dict(point.config), point.score, baseline.seconds / point.seconds, point.seconds,
            guess.score if guess else None,
            baseline.seconds / guess.seconds if guess else None))


class _Steps:
    """Counts runs for a ``progress(label, done, total)`` callback."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(label, min(self.done, self.total), self.total)


def _rebase(curve: ApproxCurve, seconds: float) -> None:
    """Speedups against the exact program's time ``seconds``; points no
    longer faster leave the curve."""
    rebased = [ApproxPoint(p.knobs, p.qos, seconds / p.seconds, p.seconds, p.predicted_qos,
                           p.predicted_speedup and p.predicted_speedup * seconds
                           / curve.points[0].seconds) for p in curve.points[1:]]
    curve.points[:] = [ApproxPoint({}, curve.points[0].qos, 1.0, seconds)] + [
        p for p in rebased if p.speedup > 1.0]


def _candidates(feasible: list[Point], count: int) -> list[Point]:
    """At most ``count`` predicted points to run: the front, then the front
    of the rest, and so on (a front longer than what is left is sampled
    evenly, its fastest point included)."""
    chosen: list[Point] = []
    rest = list(feasible)
    while rest and len(chosen) < count:
        front = pareto(rest)
        room = count - len(chosen)
        if len(front) > room:
            step = (len(front) - 1) / max(room - 1, 1)
            front = [front[round(i * step)] for i in range(room)]
        chosen.extend(front)
        taken = {id(p) for p in front}
        rest = [p for p in rest if id(p) not in taken]
    return chosen


def _agreement(pairs: list[tuple[float, float]], kept: int) -> dict:
    if not pairs:
        return {"mean_abs_error": 0.0, "correlation": float("nan"), "kept": 0, "validated": 0}
    predicted, measured = (np.array(v, np.float64) for v in zip(*pairs))
    spread = predicted.std() * measured.std()
    correlation = float(np.corrcoef(predicted, measured)[0, 1]) if spread > 0 else float("nan")
    return {"mean_abs_error": float(np.mean(np.abs(predicted - measured))),
            "correlation": correlation if not math.isnan(correlation) else float("nan"),
            "kept": kept, "validated": len(pairs)}


def _check_choice(what: str, value: str, allowed) -> None:
    if value not in allowed:
        raise ApproxError(f"{what} '{value}' is not one of: {', '.join(allowed)}")


def machine() -> str:
    """Where speedups were measured, in words."""
    return f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".replace(
        "  ", " ")
