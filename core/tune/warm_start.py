"""A warm start for small budgets: before an engine models the space, the
target's own schedule (its default pipeline) and single changes of the
per-node schedule forms around it.

A space of twenty parameters is mostly knobs whose values move a kernel
by a few percent, and a handful of forms (a fusion, a reduction's form, a
tile) that move it by integer factors.  HyperMapper's design of
experiments samples all of them uniformly, and with a budget of a dozen
samples that design is the whole search: on the H200, one run of the GPU
tuning experiment found sgemm's small register tiles (1.89x) and the next,
its space larger by one parameter, did not (1.04x).  Screening the forms
one at a time from the default pipeline, the point the targets' models
chose, is what a person tuning by hand does first; the engine then starts
from those samples (HyperMapper resumes from them instead of its random
design).

Which forms get the changes is what a profile tells a person: each form
parameter's share follows the time its nodes took in the defaults' run
(a loop nest's: the nodes that run its function; a node the pipeline
made, ``<node>_...``, counts for its node).  Backprop's
``layerforward``, 86% of its time on the H200, got two of four changes
when they went to the parameters in turn, and the split form that won
was never tried.  A parameter's kinds of form, and each kind's values,
come in the order the space lists them, the likelier first.  A change
that made the program slower counts for more than one once every kind
of its parameter has had a change (sgemm's tree of 256 lanes ran 14x
slower than the default pipeline; its reduction then waits while the
tiles are tried, unless a split is still to be tried).  The last
sample of the warm start puts the changes that won together, as
one-factor-at-a-time screening ends: mriq's fastest forms were a
reduction's (split 32) and a fusion's (phi_mag recomputed), each
measured alone.
"""
from __future__ import annotations

import math
import random
from typing import Any

from ..ir.graph import KernelBody
from ..passes.module_tools import iter_nodes
from .search import Outcome, key_of
from .space import Space

SCHEDULE_ROLES = ("stencil-fusion", "node-fusion", "parallel-reduce", "tile", "loop-interchange",
                  "loop-tile")
"""The parameters whose values are schedule forms of a node, a pair or a
loop nest."""
LOOP_ROLES = ("loop-interchange", "loop-tile")
"""Those whose subject is a loop (``fn.var``): its time is that of the
nodes running ``fn``."""


class Screening:
    """The configurations of a warm start, chosen one at a time: the
    default pipeline (where the space has one, else the defaults), then
    that point with one schedule form changed, never a configuration in
    ``seen`` (keys).

    Which forms: each form parameter's share of the changes follows the
    time its nodes took in ``profile`` (node -> seconds, the defaults'
    run): the next change goes to the parameter with the most time per
    change counted so far (the highest-averages rule of seat
    allocation); with equal times (no profile), every parameter once
    before any twice.  A change that ``learn`` hears made the program k
    times slower than the base counts as 1 + log2 k changes, an
    infeasible one as two, once every kind of its parameter's forms has
    had a change (a tree's loss says nothing of a split's).  Which
    values: a parameter's kinds of form (tree, split, chunks ...) each
    once, in the space's order (its likelier first), before any kind
    twice.  ``together`` then offers the changes that won, all at
    once."""

    def __init__(self, design: Space, seed: int, seen=(), profile=None):
        self.base = design.default_pipeline() or design.defaults()
        rng = random.Random(seed)
        choices = [(p, _varied([v for v in p.values if v != self.base[p.name]]))
                   for p in design if p.role in SCHEDULE_ROLES]
        rng.shuffle(choices)
        self.values = {p.name: values for p, values in choices}
        runs = _nodes_running(design.module)
        profile = profile or {}
        made = _made_from(profile, {name for names in runs.values() for name in names})
        self.weight = _weights({p.name: _seconds(p, profile, runs, made) for p, _ in choices})
        self.used = dict.fromkeys(self.values, 0)
        self.counted = dict.fromkeys(self.values, 0.0)
        self.taken = set(seen)
        self.base_pending = key_of(self.base) not in self.taken
        self.base_value: float | None = None
        self.changed: dict[str, str] = {}
        """Configuration key -> the parameter it changes."""
        self.winners: dict[str, tuple[float, Any]] = {}
        """Parameter -> (objective, value) of its best change that beat the base."""

    def take(self, count: int) -> list[dict[str, Any]]:
        """At most ``count`` more configurations; [] when none is left."""
        chosen = []
        if self.base_pending and count > 0:
            self.base_pending = False
            self.taken.add(key_of(self.base))
            chosen.append(self.base)
        while len(chosen) < count:
            left = [name for name, values in self.values.items()
                    if self.used[name] < len(values)]
            if not left:
                break
            name = max(left, key=lambda n: self.weight[n] / (1 + self.counted[n]))
            values = {**self.base, name: self.values[name][self.used[name]]}
            self.used[name] += 1
            self.counted[name] += 1
            if key_of(values) not in self.taken:
                self.taken.add(key_of(values))
                self.changed[key_of(values)] = name
                chosen.append(values)
        return chosen

    def learn(self, configurations: list[dict], outcomes: list[Outcome], objective: str) -> None:
        """Count the changes among ``configurations`` by their outcomes
        against the base's (the base among them, or measured before)."""
        for values, outcome in zip(configurations, outcomes):
            if key_of(values) == key_of(self.base) and outcome.feasible:
                self.base_value = outcome.objectives.get(objective)
        for values, outcome in zip(configurations, outcomes):
            name = self.changed.get(key_of(values))
            if name is None:
                continue
            value = outcome.objectives.get(objective) if outcome.feasible else None
            if value is None or self.base_value and value > self.base_value:
                if not self._kinds_left(name):   # a kind's loss says nothing of another's
                    self.counted[name] += 1 if value is None else \
                        math.log2(value / self.base_value)
            elif self.base_value and value < self.winners.get(name, (self.base_value,))[0]:
                self.winners[name] = (value, values[name])

    def _kinds_left(self, name: str) -> bool:
        """Whether a kind of form (a value's first word) of parameter
        ``name`` has not had its change yet."""
        tried = {_kind(v) for v in self.values[name][:self.used[name]]}
        return any(_kind(v) not in tried for v in self.values[name])

    def together(self) -> dict[str, Any] | None:
        """The base with every parameter's best winning change at once,
        where two or more parameters have one and it was not measured."""
        values = {**self.base, **{name: value for name, (_, value) in self.winners.items()}}
        if len(self.winners) < 2 or key_of(values) in self.taken:
            return None
        self.taken.add(key_of(values))
        return values


def screening(design: Space, count: int, seed: int, seen=(), profile=None) -> list[dict[str, Any]]:
    """The first ``count`` configurations of a Screening that learns
    nothing (what it measures first, before any outcome)."""
    return Screening(design, seed, seen, profile).take(count)


def _seconds(parameter, profile: dict[str, float], runs: dict[str, list[str]],
             made: dict[str, str]) -> float | None:
    """The seconds the nodes of ``parameter`` (a node, a pair
    ``producer:consumer``, or a loop ``fn.var`` of the nodes in ``runs``
    of ``fn``) took in ``profile``, with those of the nodes ``made`` from
    them (_made_from); None where the profile names none of them (no
    profile, or nodes the run did not report apart)."""
    if parameter.role in LOOP_ROLES:
        nodes = runs.get(str(parameter.subject).partition(".")[0], [])
    else:
        nodes = [node.rsplit(".", 1)[-1] for node in str(parameter.subject).split(":")]
    times = [seconds for name, seconds in profile.items()
             if name in nodes or made.get(name) in nodes]
    return sum(times) if times else None


def _made_from(profile: dict[str, float], nodes: set[str]) -> dict[str, str]:
    """Each node of ``profile`` that is not one of ``nodes`` (one the
    default pipeline made: ``layerforward_partial``, ``sgemm_4x4``) ->
    the longest of ``nodes`` its name extends (``<node>_...``)."""
    made = {}
    for name in profile:
        if name not in nodes:
            origins = [node for node in nodes if name.startswith(f"{node}_")]
            if origins:
                made[name] = max(origins, key=len)
    return made


def _nodes_running(module) -> dict[str, list[str]]:
    """Function name -> the names of the nodes that run it."""
    runs: dict[str, list[str]] = {}
    for _, node in iter_nodes(module):
        if isinstance(node.body, KernelBody):
            runs.setdefault(node.body.function, []).append(node.name)
    return runs


def _weights(seconds: dict[str, float | None]) -> dict[str, float]:
    """Each parameter's weight: its seconds, the average where unknown;
    all equal where no time is known or all are zero."""
    known = [value for value in seconds.values() if value is not None]
    if not any(known):
        return dict.fromkeys(seconds, 1.0)
    average = sum(known) / len(known)
    return {name: average if value is None else value for name, value in seconds.items()}


def _kind(value) -> str:
    """A value's kind of form: its first word (tree, split, chunks, yes ...)."""
    return str(value).split()[0]


def _varied(values: list) -> list:
    """``values`` so that every kind (a value's first word: tree, split,
    chunks, yes ...) comes once before any kind comes twice, kinds and
    each kind's values in the order given: the space lists the likelier
    first (pass_parameters.REDUCE_FORMS: a tree of one warp, then split
    8; sgemm 512^3 on an H100: split 8 0.025 ms, split 32 0.046, the
    default pipeline 0.036; with the kinds in a random order, seed 0 left
    the split for a fifth change of four)."""
    by_kind: dict[str, list] = {}
    for value in values:
        by_kind.setdefault(_kind(value), []).append(value)
    depth = max((len(group) for group in by_kind.values()), default=0)
    return [group[round_] for round_ in range(depth) for group in by_kind.values()
            if round_ < len(group)]


def warm_start(design: Space, call, count: int, batch: int, seed: int, seen, notes,
               profile=None, objective: str = "seconds") -> None:
    """Measure a Screening's configurations (at most ``count``) through
    ``call`` in batches of ``batch``, each batch chosen after the last
    one's outcomes (``seen``: key -> the outcome recorded before), the
    last one the winning changes together where two parameters have one;
    a note in ``notes`` says what."""
    screen = Screening(design, seed, seen, profile)
    if key_of(screen.base) in seen:
        screen.learn([screen.base], [seen[key_of(screen.base)]], objective)
    measured, together = [], None
    while len(measured) < count:
        room = count - len(measured)
        chosen = screen.take(min(batch, room - 1)) if room > 1 else []
        if not chosen:   # the last place: the winners together, else one more change
            together = screen.together()
            chosen = [together] if together is not None else screen.take(1)
        if not chosen:
            break
        screen.learn(chosen, call(chosen), objective)
        measured += chosen
    changes = len(screen.changed.keys() & {key_of(v) for v in measured})
    pipeline = design.default_pipeline() is not None and screen.base in measured
    parts = (["the default pipeline"] if pipeline else []) + \
        ([f"{changes} single change{'s' if changes > 1 else ''} of the schedule forms"]
         if changes else []) + \
        ([f"the winning changes of {', '.join(screen.winners)} together"] if together else [])
    if parts:
        notes.append(f"warm start, before the engine: {' and '.join(parts)}")
