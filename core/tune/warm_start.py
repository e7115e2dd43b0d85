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
"""
from __future__ import annotations

import random
from typing import Any

from .search import key_of
from .space import Space

SCHEDULE_ROLES = ("stencil-fusion", "node-fusion", "parallel-reduce", "tile")
"""The parameters whose values are schedule forms of a node or a pair."""


def screening(design: Space, count: int, seed: int, seen=(), profile=None) -> list[dict[str, Any]]:
    """At most ``count`` configurations to measure first: the default
    pipeline (where the space has one), then that point with one schedule
    form changed; none of them in ``seen`` (keys).

    Which forms: each form parameter's share of the changes follows the
    time its nodes took in ``profile`` (node -> seconds, the defaults'
    run), one change at a time to the parameter with the most time per
    change so far (the highest-averages rule of seat allocation); without
    a profile, every parameter once before any twice.  Which values: a
    parameter's kinds of form (tree, split, chunks ...) each once, in a
    random order, before any kind twice."""
    base = design.default_pipeline() or design.defaults()
    rng = random.Random(seed)
    choices = []
    for parameter in design:
        if parameter.role in SCHEDULE_ROLES:
            values = _varied([v for v in parameter.values if v != base[parameter.name]], rng)
            choices.append((parameter.name, values, _weight(parameter, profile)))
    rng.shuffle(choices)
    if not any(weight for _, _, weight in choices):
        choices = [(name, values, 1.0) for name, values, _ in choices]
    tried = {name: 0 for name, _, _ in choices}
    moves = []
    while True:
        open_ = [(name, values, weight) for name, values, weight in choices
                 if tried[name] < len(values)]
        if not open_:
            break
        name, values, _ = max(open_, key=lambda c: c[2] / (1 + tried[c[0]]))
        moves.append({**base, name: values[tried[name]]})
        tried[name] += 1
    taken = set(seen)
    chosen = []
    for values in [base] + moves:
        if len(chosen) == count:
            break
        if key_of(values) not in taken:
            taken.add(key_of(values))
            chosen.append(values)
    return chosen


def _weight(parameter, profile) -> float:
    """The seconds the nodes of ``parameter`` (a node, or a pair
    ``producer:consumer``) took in ``profile``."""
    if not profile or not isinstance(parameter.subject, str):
        return 0.0
    nodes = parameter.subject.split(":")
    return sum(profile.get(node.rsplit(".", 1)[-1], 0.0) for node in nodes)


def _varied(values: list, rng: random.Random) -> list:
    """``values`` shuffled, then ordered so that every kind (a value's
    first word: tree, split, chunks, yes ...) comes once before any kind
    comes twice."""
    rng.shuffle(values)
    seen: dict[str, int] = {}
    rounds = []
    for value in values:
        kind = str(value).split()[0]
        rounds.append(seen.get(kind, 0))
        seen[kind] = rounds[-1] + 1
    return [value for _, value in sorted(zip(rounds, values), key=lambda pair: pair[0])]


def warm_start(design: Space, call, count: int, batch: int, seed: int, seen, notes,
               profile=None) -> None:
    """Measure ``screening``'s configurations (at most ``count``, the
    changes chosen by ``profile``) through ``call`` in batches of
    ``batch``; a note in ``notes`` says what."""
    chosen = screening(design, count, seed, seen, profile)
    pipeline = design.default_pipeline()
    changes = len(chosen) - (pipeline is not None and pipeline in chosen)
    parts = (["the default pipeline"] if len(chosen) > changes else []) + \
        ([f"{changes} single change{'s' if changes > 1 else ''} of the schedule forms"]
         if changes else [])
    if parts:
        notes.append(f"warm start, before the engine: {' and '.join(parts)}")
    for start in range(0, len(chosen), batch):
        call(chosen[start:start + batch])
