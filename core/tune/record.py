"""The tuning record: the space and every sample with its parameters,
objectives, feasibility and wall time, as JSON written after every batch,
so that an interrupted run loses nothing and ``--resume`` goes on from it.

    {"format": "hpvm-tune-record/1", "module": "<sha256>", "targets": [...],
     "engine": "hypermapper", "objectives": ["seconds"], "mode": "measure",
     "parameters": [{"name": ..., "values": [...], "default": ..., "about": ...}],
     "samples": [{"index": 0, "values": {...}, "feasible": true,
                  "objectives": {"seconds": 0.0031, "compile_seconds": 1.2},
                  "error": "", "wall_seconds": 1.9}],
     "confirmations": [...the best samples and the defaults measured again...]}
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..files import write_text_atomically
from .search import Outcome, key_of
from .significance import wins_clearly
from .space import Space, TuneError

RECORD_FORMAT = "hpvm-tune-record/1"


@dataclass
class Sample:
    index: int
    values: dict[str, Any]
    feasible: bool
    objectives: dict[str, float] = field(default_factory=dict)
    error: str = ""
    wall_seconds: float = 0.0
    rounds: dict[str, list[float]] = field(default_factory=dict)
    """A confirmation's values per run, interleaved with the others'."""
    profile: dict[str, float] = field(default_factory=dict)
    """A measured sample's seconds per node (Outcome.profile)."""

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.feasible, dict(self.objectives), self.error,
                       profile=dict(self.profile))


@dataclass
class TuningRecord:
    module: str
    targets: list[str]
    engine: str
    objectives: list[str]
    mode: str
    parameters: list[dict]
    samples: list[Sample] = field(default_factory=list)
    confirmations: list[Sample] = field(default_factory=list)
    """The best samples, the defaults and the program as written measured
    again, longer, at the end (``index`` is the sample's, -1 for a
    configuration no sample had); ``best`` chooses among these."""
    baseline: str = ""
    """The key (search.key_of) of the confirmation of the defaults: any
    other wins only by beating it clearly (significance.py)."""

    @classmethod
    def start(cls, design: Space, engine: str, objectives: list[str], mode: str) -> "TuningRecord":
        parameters = [{"name": p.name, "values": list(p.values), "default": p.default,
                       "about": p.about} for p in design]
        return cls(design.digest, list(design.targets), engine, list(objectives), mode, parameters)

    def add(self, values: dict, outcome: Outcome, wall_seconds: float) -> Sample:
        sample = Sample(len(self.samples), values, outcome.feasible, dict(outcome.objectives),
                        outcome.error, wall_seconds, profile=dict(outcome.profile))
        self.samples.append(sample)
        return sample

    def seen(self) -> dict[str, Outcome]:
        """Outcome per configuration key, for resuming."""
        return {key_of(s.values): s.outcome for s in self.samples}

    def feasible(self) -> list[Sample]:
        return [s for s in self.samples if s.feasible and self.objectives[0] in s.objectives]

    def best(self) -> Sample | None:
        """The feasible sample with the lowest first objective: among the
        confirmations when there are any (a sample that was lucky once
        does not win), else among all samples.  A confirmation other than
        the defaults' wins only where its runs beat theirs clearly
        (significance.wins_clearly); else the defaults stay."""
        name = self.objectives[0]
        confirmed = [s for s in self.confirmations if s.feasible and name in s.objectives]
        baseline = self.confirmed_baseline()
        if baseline is not None:
            confirmed = [s for s in confirmed if s is baseline or wins_clearly(
                s.rounds.get(name, []), baseline.rounds.get(name, []))]
        return min(confirmed or self.feasible(), key=lambda s: s.objectives[name], default=None)

    def confirmed_baseline(self) -> Sample | None:
        """The defaults' confirmation, where its runs were recorded."""
        name = self.objectives[0]
        return next((s for s in self.confirmations if self.baseline and s.feasible
                     and key_of(s.values) == self.baseline and s.rounds.get(name)), None)

    def unclear_winner(self) -> Sample | None:
        """The confirmation with the lowest first objective where ``best``
        kept the defaults instead: it did not win clearly."""
        name = self.objectives[0]
        confirmed = [s for s in self.confirmations if s.feasible and name in s.objectives]
        fastest = min(confirmed, key=lambda s: s.objectives[name], default=None)
        return fastest if fastest is not None and fastest is not self.best() else None

    def first_profile(self) -> dict[str, float]:
        """The time per node of the first sample measured (the defaults')."""
        return next((s.profile for s in self.samples if s.feasible and s.profile), {})

    def best_so_far(self) -> list[float | None]:
        """The best first objective after each sample (None before any is feasible)."""
        best, curve = None, []
        for s in self.samples:
            value = s.objectives.get(self.objectives[0]) if s.feasible else None
            if value is not None and (best is None or value < best):
                best = value
            curve.append(best)
        return curve

    def pareto_front(self) -> list[Sample]:
        """The feasible samples no other beats on every objective, by the
        first objective."""
        names = self.objectives
        points = [s for s in self.feasible() if all(n in s.objectives for n in names)]
        front = [s for s in points
                 if not any(all(o.objectives[n] <= s.objectives[n] for n in names)
                            and any(o.objectives[n] < s.objectives[n] for n in names)
                            for o in points)]
        return sorted(front, key=lambda s: s.objectives[names[0]])

    def check_resumable(self, design: Space, engine: str, objectives: list[str], mode: str,
                        path: str) -> None:
        """TuneError when this record is not of the same tuning problem."""
        mine = [p["name"] for p in self.parameters]
        theirs = [p.name for p in design]
        for what, old, new in (("program (module sha256)", self.module, design.digest),
                               ("targets", self.targets, list(design.targets)),
                               ("parameters", mine, theirs), ("objectives", self.objectives,
                                                              list(objectives)),
                               ("mode", self.mode, mode)):
            if old != new:
                raise TuneError(f"{path}: cannot resume: it records another {what} "
                                f"(fix: give a new --output, or the same options as that run)")

    def to_json(self) -> dict:
        return {"format": RECORD_FORMAT, "module": self.module, "targets": self.targets,
                "engine": self.engine, "objectives": self.objectives, "mode": self.mode,
                "parameters": self.parameters, "samples": [asdict(s) for s in self.samples],
                "confirmations": [asdict(s) for s in self.confirmations],
                "baseline": self.baseline}

    def save(self, path: str | Path) -> None:
        write_text_atomically(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "TuningRecord":
        try:
            data = json.loads(Path(path).read_text())
        except OSError as error:
            raise TuneError(f"{path}: cannot read the tuning record ({error.strerror})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise TuneError(f"{path}: not a tuning record ({error})") from None
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            raise TuneError(f"{path}: not a tuning record (no format '{RECORD_FORMAT}'; fix: "
                            "give the file hpvm tune --output wrote)")
        try:
            samples = [Sample(**s) for s in data["samples"]]
            confirmations = [Sample(**s) for s in data.get("confirmations", [])]
            return cls(data["module"], list(data["targets"]), data["engine"],
                       list(data["objectives"]), data["mode"], list(data["parameters"]), samples,
                       confirmations, str(data.get("baseline", "")))
        except (KeyError, TypeError) as error:
            raise TuneError(f"{path}: the tuning record is damaged ({error!r}); fix: start "
                            "again with a new --output") from None
