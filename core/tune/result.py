"""What ``hpvm.tune`` returns: the space, the record, the best
configuration and the notes, and the winner in words (``summary``)."""
from __future__ import annotations

from dataclasses import dataclass

from .config import TuningConfig
from .record import Sample, TuningRecord
from .search import key_of
from .significance import rounds_won
from .space import Space

TIME_PER_NODE_ROWS = 8
"""The nodes the summary shows the time of (those that took the most)."""


@dataclass
class TuneResult:
    space: Space
    record: TuningRecord
    best: TuningConfig | None
    notes: list[str]

    @property
    def baseline(self) -> Sample | None:
        """The sample of the defaults, when it was evaluated."""
        defaults = key_of(self.space.defaults())
        return next((s for s in self.record.confirmations + self.record.samples
                     if key_of(s.values) == defaults), None)

    @property
    def speedup(self) -> float | None:
        """Baseline over best, in the first objective."""
        name = self.record.objectives[0]
        baseline, best = self.baseline, self.record.best()
        if baseline is None or not baseline.feasible or best is None:
            return None
        return baseline.objectives[name] / best.objectives[name]

    def __repr__(self) -> str:
        return f"<TuneResult: {self.summary().splitlines()[0]}>"

    def _confirmed_as(self, values: dict) -> str:
        """What a configuration the confirmation step added stands for."""
        if key_of(values) == key_of(self.space.default_pipeline() or {}):
            return "the default pipeline"
        return "the program as written"

    def _described(self, sample: Sample) -> str:
        if sample.index >= 0:
            return f"sample {sample.index} of {len(self.record.samples)}"
        return f"{self._confirmed_as(sample.values)}, measured in the confirmation step"

    def summary(self) -> str:
        """The winning configuration in words: the parameters it changes."""
        best = self.record.best()
        if best is None:
            return "no feasible configuration was found"
        name = self.record.objectives[0]
        which = self._described(best)
        lines = [f"best {name}: {_seconds(best.objectives[name])} ({which})"]
        if self.speedup is not None:
            lines.append(f"speedup over the defaults: {self.speedup:.2f}x")
        changed = {k: v for k, v in self.space.checked(best.values).items()
                   if key_of({k: v}) != key_of({k: self.space.parameter(k).default})}
        if changed:
            lines.append("changes:")
            lines.extend(f"  {p.name} = {p.label(changed[p.name])}  ({p.about})"
                         for p in self.space.parameters
                         if p.name in changed)
        else:
            lines.append("the defaults are best")
        unclear = self.record.unclear_winner()
        if unclear is not None:
            won, runs = rounds_won(unclear.rounds.get(name, []),
                                   self.record.confirmed_baseline().rounds.get(name, []))
            ratio = best.objectives[name] / unclear.objectives[name]
            lines.append(f"not taken: {self._described(unclear)}, {ratio:.2f}x faster by its "
                         f"median, beat the defaults in only {won} of {runs} interleaved runs "
                         "(within the noise)")
        lines.extend(self._time_per_node(best))
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def _time_per_node(self, best: Sample) -> list[str]:
        """Where the time went, the defaults' run against the best's (the
        nodes that took the most, as the runs reported them), where both
        were measured and differ."""
        before, after = self._profile_of(self.space.defaults()), self._profile_of(best.values)
        if not before or not after or key_of(best.values) == key_of(self.space.defaults()):
            return []
        nodes = sorted(before.keys() | after.keys(),
                       key=lambda n: (-max(before.get(n, 0.0), after.get(n, 0.0)), n))
        shown = nodes[:TIME_PER_NODE_ROWS]
        width = max(len(node) for node in shown)

        def cell(seconds):
            return f"{seconds * 1e3:9.3f}" if seconds is not None else f"{'-':>9}"
        lines = ["time per node (ms), the defaults -> the best:"]
        lines += [f"  {node:<{width}} {cell(before.get(node))} -> {cell(after.get(node))}"
                  for node in shown]
        if len(nodes) > len(shown):
            lines.append(f"  ({len(nodes) - len(shown)} more nodes)")
        return lines

    def _profile_of(self, values: dict) -> dict[str, float]:
        """The time per node a sample with ``values`` recorded ({}: none)."""
        key = key_of(values)
        return next((s.profile for s in self.record.samples
                     if key_of(s.values) == key and s.profile), {})


def _seconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"
