"""Search engines: which configurations to evaluate next.

Every engine has one method, ``run(space, evaluate, budget, batch, seed,
seen, objectives)``: for ``budget`` more samples, it calls ``evaluate(configurations)`` with batches of at most
``batch`` configurations (dicts of parameter values) and gets back one
Outcome per configuration (its objectives, or infeasible); it stops when
the driver raises ``BudgetSpent`` from ``evaluate`` or when it has nothing
left to propose.  ``seen`` holds the outcomes of an earlier run being
resumed, so no engine proposes them again.

- ``exhaustive``: every configuration, the defaults first (spaces no
  bigger than the budget);
- ``random``: uniform samples without repeats, the defaults first (the
  baseline the others are judged against);
- ``hypermapper``: HyperMapper 2's Bayesian optimisation (random-forest
  surrogate, design-of-experiments warm start, feasibility model,
  multi-objective), through hypermapper_compat.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy

from .hypermapper_compat import load_hypermapper
from .parameter import as_json
from .space import Space, TuneError

ENGINES = ("auto", "hypermapper", "random", "exhaustive")


class BudgetSpent(Exception):
    """Raised by the driver's ``evaluate`` once the budget is used up."""


@dataclass
class Outcome:
    """What a configuration gave: its objectives (lower is better) when
    feasible; ``error`` says why it is not."""

    feasible: bool
    objectives: dict[str, float] = field(default_factory=dict)
    error: str = ""
    rounds: dict[str, list[float]] = field(default_factory=dict)
    """Each run's value of the objectives measured per run, in order (the
    objectives are their medians)."""
    profile: dict[str, float] = field(default_factory=dict)
    """A measured sample's time per node (its label in the run's report:
    the node's name), the median over the runs."""


Evaluate = Callable[[list[dict]], list[Outcome]]


def key_of(values: dict) -> str:
    """A configuration as a hashable key (its canonical JSON)."""
    return as_json(values)


class Exhaustive:
    name = "exhaustive"

    def run(self, space: Space, evaluate: Evaluate, budget: int, batch: int, seed: int,
            seen: dict[str, Outcome], objectives: list[str]) -> None:
        pending = []
        for values in space.enumerate():
            if key_of(values) in seen:
                continue
            pending.append(values)
            if len(pending) == batch:
                evaluate(pending)
                pending = []
        if pending:
            evaluate(pending)


class RandomSearch:
    name = "random"

    def run(self, space: Space, evaluate: Evaluate, budget: int, batch: int, seed: int,
            seen: dict[str, Outcome], objectives: list[str]) -> None:
        rng = random.Random(seed)
        taken = set(seen)
        first = space.defaults()
        queue = [] if key_of(first) in taken else [first]
        taken.add(key_of(first))
        limit = space.size
        misses = 0
        while len(taken) < limit or queue:
            while len(queue) < batch and len(taken) < limit and misses < 1000:
                values = {p.name: rng.choice(p.values) for p in space}
                if key_of(values) in taken:
                    misses += 1
                    continue
                taken.add(key_of(values))
                queue.append(values)
            if not queue:
                return
            evaluate(queue)
            queue = []


class HyperMapperSearch:
    """HyperMapper 2 behind the engine interface.  Parameters go to it as
    ``p0``, ``p1`` ...: numbers as ordinals (their order helps the model),
    everything else as categories named by value index."""

    name = "hypermapper"
    FEASIBLE = "Valid"

    def run(self, space: Space, evaluate: Evaluate, budget: int, batch: int, seed: int,
            seen: dict[str, Outcome], objectives: list[str]) -> None:
        optimizer = load_hypermapper()
        names = {f"p{i}": p for i, p in enumerate(space)}
        worst = [1.0]

        def black_box(columns: dict) -> dict:
            batched = isinstance(next(iter(columns.values())), list)
            rows = [dict(zip(columns, row)) for row in zip(*columns.values())] if batched \
                else [columns]
            configurations = [{names[k].name: self._value(names[k], v) for k, v in row.items()}
                              for row in rows]
            outcomes = evaluate(configurations)
            results = {name: [] for name in objectives + [self.FEASIBLE]}
            for outcome in outcomes:
                for name in objectives:
                    value = outcome.objectives.get(name) if outcome.feasible else None
                    if value is not None:
                        worst[0] = max(worst[0], value)
                    results[name].append(float(value) if value is not None else worst[0] * 10)
                results[self.FEASIBLE].append(outcome.feasible)
            return results if batched else {k: v[0] for k, v in results.items()}

        with tempfile.TemporaryDirectory(prefix="hpvm-hypermapper-") as folder:
            scenario = self._scenario(names, objectives, budget, batch, len(seen), Path(folder))
            if seen:
                self._write_history(Path(folder) / "history.csv", names, seen, objectives)
                scenario["resume_optimization"] = True
                scenario["resume_optimization_data"] = str(Path(folder) / "history.csv")
            path = Path(folder) / "scenario.json"
            path.write_text(json.dumps(scenario))
            random.seed(seed)
            numpy.random.seed(seed)
            with contextlib.redirect_stdout(io.StringIO()):
                optimizer.optimize(str(path), black_box)

    @staticmethod
    def _value(parameter, raw):
        if parameter.ordered:
            return parameter.values[parameter.index_of(type(parameter.values[0])(raw))]
        return parameter.values[int(raw)]

    def _scenario(self, names: dict, objectives: list[str], budget: int, batch: int,
                  done: int, folder: Path) -> dict:
        inputs = {}
        for key, parameter in names.items():
            if parameter.ordered:
                inputs[key] = {"parameter_type": "ordinal", "values": sorted(parameter.values),
                               "parameter_default": parameter.default}
            else:
                inputs[key] = {"parameter_type": "categorical",
                               "values": [str(i) for i in range(len(parameter.values))],
                               "parameter_default": str(parameter.index_of(parameter.default))}
        warm_start = 0 if done else min(max(2 * len(names), 6), budget)
        iterations = math.ceil(max(budget - warm_start, 1) / batch) + 2  # the driver stops it
        return {
            "application_name": "hpvm", "optimization_objectives": objectives,
            "design_of_experiment": {"doe_type": "random sampling",
                                     "number_of_samples": warm_start},
            "optimization_iterations": iterations,
            "evaluations_per_optimization_iteration": batch,
            "input_parameters": inputs,
            "feasible_output": {"enable_feasible_predictor": True, "name": self.FEASIBLE,
                                "true_value": "True", "false_value": "False"},
            "models": {"model": "random_forest"},
            # Local search in this process: forking a process that runs
            # threads (hpvm's pools, numba's, torch's) is unsafe, and a
            # forked search gave worse optimums inside the full test run.
            "number_of_cpus": 1,
            "output_data_file": str(folder / "samples.csv"),
            "log_file": str(folder / "hypermapper.log"),
            "print_best": False,
        }

    def _write_history(self, path: Path, names: dict, seen: dict[str, Outcome],
                       objectives: list[str]) -> None:
        lines = [",".join(list(names) + objectives + [self.FEASIBLE, "Timestamp"])]
        for key, outcome in seen.items():
            values = json.loads(key)
            cells = []
            for name, parameter in names.items():
                value = values[parameter.name]
                cells.append(str(value) if parameter.ordered else str(parameter.index_of(value)))
            cells += [str(outcome.objectives.get(o, 1e9)) if outcome.feasible else "1e9"
                      for o in objectives]
            cells += [str(outcome.feasible), "0"]
            lines.append(",".join(cells))
        path.write_text("\n".join(lines) + "\n")


def engine(name: str, space: Space, budget: int):
    """The engine called ``name``; ``auto`` enumerates a space no bigger
    than the budget and uses HyperMapper otherwise (random search when
    HyperMapper is not installed)."""
    if name == "auto":
        if space.size <= budget:
            return Exhaustive()
        try:
            load_hypermapper()
            return HyperMapperSearch()
        except ImportError:
            return RandomSearch()
    engines = {"exhaustive": Exhaustive, "random": RandomSearch, "hypermapper": HyperMapperSearch}
    if name not in engines:
        raise TuneError(f"no search engine '{name}' (fix: use one of {', '.join(ENGINES)})")
    return engines[name]()
