"""Trip counts profiled by the reference interpreter: how many times, on
average, each loop ran per entry, on given inputs.

Cost models need the trip counts of loops whose bounds come from data
(CSR row pointers, edge counts); HPVM2FPGA takes them from a profile
(its isNonZeroLoop).  ``with_profiled_trip_counts`` runs the program once
on the interpreter and writes the mean as each such loop's ``trip_count``
hint, which passes keep and back ends and cost models read.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Mapping

from ..ir import kernel as k
from ..ir.graph import Module
from ..ir.visit import walk
from . import trip_counter
from .api import Interpreter

_PROFILING = threading.Lock()
"""One profile at a time: the interpreter reports to trip_counter.ACTIVE."""


def profile_trip_counts(module: Module, inputs: Mapping[str, Any]) -> dict[int, float]:
    """Mean trips per entry of every loop the run of ``module`` on
    ``inputs`` entered, keyed by the loop's identity in ``module``."""
    counter = trip_counter.TripCounter()
    with _PROFILING:
        trip_counter.ACTIVE = counter
        try:
            Interpreter(module).run(**inputs)
        finally:
            trip_counter.ACTIVE = None
    loops = [s for f in module.functions.values() for s in walk(f.body) if isinstance(s, k.For)]
    return {id(loop): mean for loop in loops if (mean := counter.mean(loop)) is not None}


def with_profiled_trip_counts(module: Module, inputs: Mapping[str, Any]) -> tuple[Module, int]:
    """``module`` with a ``trip_count`` hint on every loop whose bounds
    come from data (a load, a local variable) and that has none, from one
    interpreted run on ``inputs``; and how many loops got one."""
    if not any(_data_dependent(loop, _sizes(f)) for f in module.functions.values()
               for loop in walk(f.body) if isinstance(loop, k.For) and loop.trip_count is None):
        return module, 0   # nothing to profile: no run
    means = profile_trip_counts(module, inputs)
    marked = 0

    def marker(function: k.KernelFunction):
        sizes = _sizes(function)

        def mark(node):
            nonlocal marked
            if isinstance(node, k.For) and node.trip_count is None \
                    and _data_dependent(node, sizes):
                marked += 1   # a loop the run never reached: 0 trips
                return dataclasses.replace(node, trip_count=max(round(means.get(id(node), 0)), 0))
            return None
        return mark

    functions = {name: dataclasses.replace(f, body=_mark_loops(f.body, means, marker(f)))
                 for name, f in module.functions.items()}
    return dataclasses.replace(module, functions=functions), marked


def _sizes(function: k.KernelFunction) -> set[str]:
    """Names that hold sizes, not data: parameters, shape symbols, loop
    variables (a triangular loop's bound) and local variables every
    assignment of which computes from those without a load (a tile's
    first row: ``tb * rows``)."""
    sizes = {p.name for p in function.params} | set(function.shape_symbols) | {
        s.var for s in walk(function.body) if isinstance(s, k.For)}
    writes: dict[str, list] = {}
    for s in walk(function.body):
        if isinstance(s, (k.Let, k.Assign)) and s.value is not None:
            writes.setdefault(s.name, []).append(s.value)
    changed = True
    while changed:
        changed = False
        for name, values in writes.items():
            if name not in sizes and all(_from_sizes(v, sizes) for v in values):
                sizes.add(name)
                changed = True
    return sizes


def _from_sizes(expr: k.Expr, sizes: set[str]) -> bool:
    return not any(isinstance(e, k.Load) or (isinstance(e, k.Var) and e.name not in sizes)
                   or isinstance(e, k.Call) for e in walk(expr))


def _data_dependent(loop: k.For, sizes: set[str]) -> bool:
    """Whether the loop's bounds read memory or a variable holding data,
    not only constants, sizes and values computed from them."""
    return not (_from_sizes(loop.start, sizes) and _from_sizes(loop.stop, sizes))


def _mark_loops(body, means, mark):
    """``body`` with every loop passed through ``mark`` (looked up before
    its own body is rewritten, so identities still match the profile)."""
    out = []
    for stmt in body:
        marked = mark(stmt) or stmt
        if isinstance(stmt, k.For):
            marked = dataclasses.replace(marked, body=_mark_loops(stmt.body, means, mark))
        elif isinstance(stmt, k.While):
            marked = dataclasses.replace(stmt, body=_mark_loops(stmt.body, means, mark))
        elif isinstance(stmt, k.If):
            marked = dataclasses.replace(stmt, then_body=_mark_loops(stmt.then_body, means, mark),
                                         else_body=_mark_loops(stmt.else_body, means, mark))
        out.append(marked)
    return tuple(out)
