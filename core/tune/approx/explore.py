"""The search over configurations: an evolutionary walk that keeps the
front of fast configurations whose QoS meets the goal.

Each step either draws a fresh random configuration (every node exact or a
random knob) or mutates one or two nodes of a configuration on the current
front (feasible and not dominated in speed).  ``evaluate(config) ->
(score, seconds)`` is a prediction (predictive tuning: thousands of steps
cost little) or a real run (empirical tuning: a small budget).  Seeded,
so a run is reproducible.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from ...passes.approximate import EXACT
from .measure import canonical

FRESH = 0.25
"""Share of steps that draw a fresh random configuration."""
STALE_LIMIT = 200
"""Steps in a row that find nothing new before the search gives up."""


@dataclass(frozen=True)
class Point:
    """An evaluated configuration."""

    config: dict
    score: float
    seconds: float


def pareto(points: list[Point]) -> list[Point]:
    """The points no other point beats in both score (higher) and time
    (lower), fastest first."""
    front: list[Point] = []
    for point in sorted(points, key=lambda p: (p.seconds, -p.score)):
        if not front or point.score > front[-1].score:
            front.append(point)
    return front


def explore(choices: dict[str, list[str]], evaluate: Callable[[dict], tuple[float, float]],
            threshold: float, budget: int, seed: int = 0,
            progress: Callable[[Point], None] | None = None) -> list[Point]:
    """Every configuration evaluated (the all-exact one first), at most
    ``budget``."""
    rng = random.Random(seed)
    nodes = [node for node, knobs in choices.items() if len(knobs) > 1]
    seen: dict[tuple, Point] = {}

    def visit(config: dict) -> bool:
        key = canonical(config)
        if key in seen:
            return False
        score, seconds = evaluate(dict(key))
        seen[key] = Point(dict(key), score, seconds)
        if progress is not None:
            progress(seen[key])
        return True

    visit({})
    stale = 0
    while len(seen) < budget and stale < STALE_LIMIT and nodes:
        front = pareto([p for p in seen.values() if p.score >= threshold])
        if not front or rng.random() < FRESH:
            density = rng.random()
            config = {n: rng.choice(choices[n][1:]) for n in nodes if rng.random() < density}
        else:
            config = dict(rng.choice(front).config)
            for node in rng.sample(nodes, min(len(nodes), rng.choice((1, 1, 2)))):
                config[node] = rng.choice(choices[node])
        stale = 0 if visit({n: k for n, k in config.items() if k != EXACT}) else stale + 1
    return list(seen.values())
