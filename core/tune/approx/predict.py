"""Predictive tuning (ApproxTuner): profile each knob of each node alone,
then predict any configuration from the profile instead of running it.

Two error-composition models predict a configuration's QoS:

- ``pi1`` sums the QoS losses the configuration's knobs caused alone;
- ``pi2`` adds the changes the knobs caused alone to the program's output
  tensor and scores the sum (errors propagate to the output roughly
  additively while they are small).

Time comes from the analytic cost model (cost.py), whose one measured
input is how FP16 runs on the target (kernel nodes: what each knob saved
alone).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...passes.approximate import EXACT
from .cost import CostModel
from .explore import Point
from .knobs import precisions_offered
from .measure import Measurement, Runner
from .qos import QoS

MODELS = ("pi1", "pi2")


@dataclass
class Profile:
    """The baseline and the effect of every (node, knob) alone."""

    baseline: Measurement
    baseline_score: float
    cost: CostModel
    scores: dict[tuple[str, str], float] = field(default_factory=dict)
    deltas: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    runs: list[Point] = field(default_factory=list)
    """Every configuration profiling ran, measured: each knob alone, and
    all nodes in each reduced precision (candidates for the curve too)."""

    def predict(self, config: dict[str, str], qos: QoS, model: str) -> tuple[float, float]:
        """(predicted score, predicted seconds) of ``config``."""
        keys = [(node, knob) for node, knob in config.items() if (node, knob) in self.scores]
        seconds = self.cost.predict(config)
        if model == "pi1":
            score = self.baseline_score + sum(self.scores[k] - self.baseline_score for k in keys)
        else:
            outputs = self.baseline.outputs + sum((self.deltas[k] for k in keys),
                                                  np.zeros_like(self.baseline.outputs))
            score = qos.score(outputs, self.baseline.outputs)
        return score, seconds


def profile(runner: Runner, choices: dict[str, list[str]], qos: QoS,
            progress: Callable[[str], None] | None = None) -> Profile:
    """Run every knob of every node alone (``choices``: node -> knobs,
    ``exact`` included and skipped), the baseline, and all nodes in each
    reduced precision they take."""
    baseline = runner.measure({})
    factors, runs = {}, []
    for precision in precisions_offered(choices):
        config = {node: precision for node, knobs in choices.items() if precision in knobs}
        reduced = runner.measure(config)
        factors[precision] = min(max(reduced.seconds / baseline.seconds, 0.25), 4.0)
        runs.append(Point(config, qos.score(reduced.outputs, baseline.outputs),
                          reduced.seconds))
    cost = CostModel(runner.module, list(choices), baseline.seconds, factors)
    result = Profile(baseline, qos.score(baseline.outputs, baseline.outputs), cost, runs=runs)
    for node, knobs in choices.items():
        for knob in knobs:
            if knob == EXACT:
                continue
            measured = runner.measure({node: knob})
            key = (node, knob)
            cost.record(node, knob, measured.seconds)
            result.scores[key] = qos.score(measured.outputs, baseline.outputs)
            result.deltas[key] = measured.outputs - baseline.outputs
            result.runs.append(Point({node: knob}, result.scores[key], measured.seconds))
            if progress is not None:
                progress(f"profiled {node}:{knob}")
    return result
