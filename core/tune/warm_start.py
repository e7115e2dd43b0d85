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
    change so far (the highest-averages rule of seat allocation); with
    equal times (no profile), every parameter once before any twice.
    Which values: a parameter's kinds of form (tree, split, chunks ...)
    each once, in a random order, before any kind twice."""
    base = design.default_pipeline() or design.defaults()
    rng = random.Random(seed)
    choices = []
    for parameter in design:
        if parameter.role in SCHEDULE_ROLES:
            values = _varied([v for v in parameter.values if v != base[parameter.name]], rng)
            choices.append((parameter.name, values, _seconds(parameter, profile or {})))
    rng.shuffle(choices)
    weight = _weights({name: seconds for name, _, seconds in choices})
    tried = dict.fromkeys(weight, 0)
    moves = []
    while left := [(name, values) for name, values, _ in choices if tried[name] < len(values)]:
        name, values = max(left, key=lambda c: weight[c[0]] / (1 + tried[c[0]]))
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


def _seconds(parameter, profile: dict[str, float]) -> float | None:
    """The seconds the nodes of ``parameter`` (a node, or a pair
    ``producer:consumer``) took in ``profile``; None where the profile
    names none of them (no profile, or nodes the run did not report
    apart): those parameters count as the average."""
    nodes = [node.rsplit(".", 1)[-1] for node in str(parameter.subject).split(":")]
    times = [profile[node] for node in nodes if node in profile]
    return sum(times) if times else None


def _weights(seconds: dict[str, float | None]) -> dict[str, float]:
    """Each parameter's weight: its seconds, the average where unknown;
    all equal where no time is known or all are zero."""
    known = [value for value in seconds.values() if value is not None]
    if not any(known):
        return dict.fromkeys(seconds, 1.0)
    average = sum(known) / len(known)
    return {name: average if value is None else value for name, value in seconds.items()}


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
