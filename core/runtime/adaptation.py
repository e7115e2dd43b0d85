"""Run-time adaptation along an approximation curve (ApproxTuner's
run-time tuner): keep a latency goal as the machine slows down and
recovers.

A :class:`LatencyGoal` sees the latency of every run.  Once it has a full
window of runs on the current configuration it estimates, from their
median and the curve's relative speedups, what every configuration would
take now, and picks the most accurate one (lowest index) expected to meet
the goal -- the fastest when none is.  Moving back to a slower, better
configuration needs a margin (HYSTERESIS), so noise does not make it
oscillate.  ``history`` records (run, seconds, configuration index).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

HYSTERESIS = 0.85
"""A slower configuration is chosen only if expected within this share of
the goal."""


@dataclass
class LatencyGoal:
    seconds: float
    speedups: list[float]
    """Per configuration of the curve (index 0: exact, speedup 1)."""
    window: int = 5
    current: int = 0
    recent: list[float] = field(default_factory=list)
    history: list[tuple[int, float, int]] = field(default_factory=list)

    def observe(self, seconds: float) -> int | None:
        """Record one run; the configuration to switch to, or None."""
        self.history.append((len(self.history), seconds, self.current))
        self.recent.append(seconds)
        if len(self.recent) < self.window:
            return None
        typical = statistics.median(self.recent[-self.window:])
        chosen = self.choose(typical)
        if chosen == self.current:
            return None
        self.current = chosen
        self.recent = []
        return chosen

    def choose(self, typical: float) -> int:
        """The configuration for a median latency ``typical`` on the
        current one."""
        here = self.speedups[self.current]
        for index, speedup in enumerate(self.speedups):
            expected = typical * here / speedup
            margin = HYSTERESIS if index < self.current else 1.0
            if expected <= self.seconds * margin:
                return index
        return max(range(len(self.speedups)), key=lambda i: self.speedups[i])
