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


def screening(design: Space, count: int, seed: int, seen=()) -> list[dict[str, Any]]:
    """At most ``count`` configurations to measure first: the default
    pipeline (where the space has one), then that point with one schedule
    form changed, every form parameter once (in a random order, each with
    a random value) before any twice; none of them in ``seen`` (keys)."""
    base = design.default_pipeline() or design.defaults()
    rng = random.Random(seed)
    choices = []
    for parameter in design:
        if parameter.role in SCHEDULE_ROLES:
            values = [v for v in parameter.values if v != base[parameter.name]]
            rng.shuffle(values)
            choices.append((parameter.name, values))
    rng.shuffle(choices)
    moves = [{**base, name: values[round_]}
             for round_ in range(max((len(v) for _, v in choices), default=0))
             for name, values in choices if round_ < len(values)]
    taken = set(seen)
    chosen = []
    for values in [base] + moves:
        if len(chosen) == count:
            break
        if key_of(values) not in taken:
            taken.add(key_of(values))
            chosen.append(values)
    return chosen


def warm_start(design: Space, call, count: int, batch: int, seed: int, seen, notes) -> None:
    """Measure ``screening``'s configurations (at most ``count``) through
    ``call`` in batches of ``batch``; a note in ``notes`` says what."""
    chosen = screening(design, count, seed, seen)
    pipeline = design.default_pipeline()
    changes = len(chosen) - (pipeline is not None and pipeline in chosen)
    parts = (["the default pipeline"] if len(chosen) > changes else []) + \
        ([f"{changes} single change{'s' if changes > 1 else ''} of the schedule forms"]
         if changes else [])
    if parts:
        notes.append(f"warm start, before the engine: {' and '.join(parts)}")
    for start in range(0, len(chosen), batch):
        call(chosen[start:start + batch])
