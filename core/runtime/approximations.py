"""The approximation curve an executable ships (hpvm.tune.approx): its
configurations, switching between them, and run-time adaptation.

    exe.configurations()        # [{"index": 0, "knobs": {}, "qos": 97.2, "speedup": 1.0}, ...]
    exe.use(2)                  # run configuration 2 from now on (compiled on first use)
    exe.set_goal(latency_ms=5)  # move along the curve to keep runs under 5 ms

A configuration is compiled from the executable's portable (exact) module
with the ``approximate`` pass, for the curve's targets, the first time it
is used, and kept.  The mixin's host class runs ``_runner`` for every run:
the variant in use, or itself (``_active`` is None then: an executable
referring to itself would be freed only by the cycle collector, at any
point of any thread).
"""
from __future__ import annotations

import functools
import time

from ..errors import HpvmError
from ..passes.approximate import apply_knobs
from .adaptation import LatencyGoal
from .compiler import build


def runs_active(method):
    """Run ``method`` on the configuration in use (the exact program, or a
    compiled variant of it)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if self._active is not None:
            return getattr(self._active, method.__name__)(*args, **kwargs)
        return method(self, *args, **kwargs)
    return wrapper


class ApproximationsMixin:
    approximations: dict | None = None
    """The shipped curve (ApproxCurve.to_json()), or None."""
    in_use: int = 0
    """Index of the configuration in use (0: the exact program)."""

    def _init_approximations(self) -> None:
        self._active = None
        self._variants: dict = {}
        self._goal: LatencyGoal | None = None
        self._clock = time.perf_counter

    def attach_approximations(self, curve) -> None:
        """Ship ``curve`` (an ApproxCurve or its JSON) with this executable."""
        self.approximations = curve.to_json() if hasattr(curve, "to_json") else dict(curve)
        self._variants = {}
        self._active, self.in_use = None, 0

    def configurations(self) -> list[dict]:
        """The shipped configurations, exact first: index, knobs, qos,
        speedup (measured where the curve was last tuned or refined)."""
        if not self.approximations:
            return []
        return [{"index": i, "knobs": dict(p["knobs"]), "qos": p["qos"],
                 "speedup": p["speedup"]} for i, p in enumerate(self.approximations["points"])]

    def use(self, config) -> None:
        """Run configuration ``config`` (its index, or its knobs dict) from
        now on."""
        index = self._index_of(config)
        self._active = None if index == 0 else self._variant(index)
        self.in_use = index
        if self._goal is not None:
            self._goal.current = index

    def set_goal(self, latency_ms: float | None, window: int = 5, clock=None) -> None:
        """Keep runs under ``latency_ms`` by moving along the curve (None:
        stop adapting); ``window`` runs are judged at a time; ``clock``
        (seconds) is for tests that simulate a slowdown."""
        if latency_ms is None:
            self._goal = None
            return
        if not self.approximations or latency_ms <= 0:
            raise HpvmError("set_goal needs a positive latency and an executable with an "
                            "approximation curve (fix: make it with hpvm approx or "
                            "approx_tune(...).executable())")
        speedups = [p["speedup"] for p in self.approximations["points"]]
        self._goal = LatencyGoal(latency_ms / 1e3, speedups, window, self.in_use)
        self._clock = clock or time.perf_counter

    def adaptation_history(self) -> list[tuple[int, float, int]]:
        """(run, seconds, configuration index) of every run under a goal."""
        return list(self._goal.history) if self._goal is not None else []

    def _adapting_call(self, inputs: dict, place: str) -> dict:
        started = self._clock()
        outputs = self._runner._run(inputs, place)
        switch = self._goal.observe(self._clock() - started)
        if switch is not None:
            self.use(switch)
        return outputs

    @property
    def _runner(self):
        return self._active if self._active is not None else self

    def _index_of(self, config) -> int:
        points = (self.approximations or {}).get("points", [])
        if isinstance(config, int) and not isinstance(config, bool) and 0 <= config < len(points):
            return config
        if isinstance(config, dict):
            for index, point in enumerate(points):
                if point["knobs"] == config:
                    return index
        raise HpvmError(f"no configuration {config!r} in this executable's curve of "
                        f"{len(points)} (fix: pass an index from exe.configurations())")

    def _variant(self, index: int):
        if index not in self._variants:
            module = apply_knobs(self.module, self.approximations["points"][index]["knobs"])
            self._variants[index] = type(self)(*build(module, self.approximations["targets"],
                                                      self.options, self._registry))
        return self._variants[index]

    def _close_variants(self) -> None:
        for variant in self._variants.values():
            variant.close()
