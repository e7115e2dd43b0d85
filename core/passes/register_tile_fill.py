"""``register-tile{form=group fill=N}``: products too small for the device
run smaller micro-tiles.

A work group of 16 x 16 instances of 8 x 8 results covers 128 x 128
results.  A 512 x 512 product makes 16 such groups, which leaves most of
a 132-unit GPU idle: on an H200 it took 0.084 ms, against 0.037 ms with
4 x 4 results in 8 x 8 groups (256 groups), and it ran slower than the
nest as written (0.058 ms).  At 2048^3 and 4096^3 the large tiles are
1.5x faster than the small ones.

Sizes are known only at launch, so the node becomes one node per
schedule: the given one, then each of FILL_LADDER that makes smaller
blocks.  A node is replicated only when its schedule is the one chosen:
the first whose launch makes at least ``fill`` work groups (a GPU's
compute units), else the last.  The others have no instances; a launch
of none is skipped.  Where the sizes are constants, the chosen schedule
alone is left.

The chosen node writes every element of its outputs, so the nodes run
one after the other, smallest tiles first, each taking the outputs of
the one before in place (their ``out`` ports made ``inout``); a node
with no instances passes them on unchanged.  The given schedule's node,
last, keeps the node's name and what it feeds.
"""
from __future__ import annotations

import dataclasses
import math

from ..ir.graph import PADDED_GROUPS, Edge, Graph, KernelBody, Module, Node
from ..ir.kernel import Const, Expr, Intrinsic, KernelFunction
from .const_fold import fold_expression
from .names import unique_name
from .register_tile_group import GroupSchedule, group_body
from .register_tile_plan import NestPlan
from .register_tile_schedule import ceil_div, i64
from .tensor_graph import replace_node

FILL_LADDER = ((8, 4, 16), (4, 4, 8), (2, 2, 8))
"""(rows, cols, group) of the smaller schedules, largest first: 128 x 64,
32 x 32 and 16 x 16 results a group (an H200: at 512^3 4 x 4 in 8 x 8
groups 0.037 ms, 8 x 4 in 16 x 16 0.063, 8 x 8 0.084; at 1024^3 8 x 4
0.114 ms, 8 x 8 0.154)."""


def ladder(schedule: GroupSchedule, fill: int) -> list[GroupSchedule]:
    """``schedule``, then (with a ``fill``) those of FILL_LADDER whose
    groups make fewer results than the one before."""
    chosen = [schedule]
    for rows, cols, group in FILL_LADDER if fill else ():
        last = chosen[-1]
        if rows * cols * group * group < last.rows * last.cols * last.group * last.group:
            chosen.append(dataclasses.replace(schedule, rows=rows, cols=cols, group=group))
    return chosen


def work_groups(plan: NestPlan, schedule: GroupSchedule, replication: tuple[Expr, ...]) -> Expr:
    """How many work groups ``schedule`` launches for a node of ``replication``."""
    sizes = schedule.replication(plan, replication)
    counts = [ceil_div(size, schedule.group) if d in (plan.rows, plan.cols) else size
              for d, size in enumerate(sizes)]
    return fold_expression(math.prod(counts[1:], start=counts[0]))


def filled(module: Module, graph: Graph, node: Node, plan: NestPlan, schedule: GroupSchedule,
           fill: int, attribute: str) -> Module:
    """``node`` as one node per schedule of ``ladder(schedule, fill)``,
    each run only where it is the chosen one (module docstring; without a
    ``fill``, the node run by ``schedule``); each node's ``attribute``
    says its (rows, cols)."""
    schedules = ladder(schedule, fill)
    runs: list[Expr] = []   # whether each schedule is the one chosen (1 or 0)
    earlier_short: Expr = i64(1)
    for index, each in enumerate(schedules):
        if index == len(schedules) - 1:
            runs.append(earlier_short)
            break
        enough = _at_least(work_groups(plan, each, node.replication), fill)
        runs.append(fold_expression(earlier_short * enough))
        earlier_short = fold_expression(earlier_short * (i64(1) - enough))
    chosen = [(each, run) for each, run in zip(schedules, runs)
              if not (isinstance(run, Const) and run.value == 0)][::-1]   # the given one last
    function = module.function(node.body.function)
    nodes, functions = [], {}
    for position, (each, run) in enumerate(chosen):
        last = position == len(chosen) - 1
        params = function.params if position == 0 else tuple(
            dataclasses.replace(p, direction="inout") if p.direction == "out" else p
            for p in function.params)
        name = unique_name(f"{function.name}_register_tiled", {**module.functions, **functions})
        functions[name] = dataclasses.replace(
            function, name=name, params=params, body=group_body(function, plan, each,
                                                                node.replication))
        replication = list(each.replication(plan, node.replication))
        if not isinstance(run, Const):
            replication[plan.rows] = fold_expression(replication[plan.rows] * run)
        group = [1] * len(node.replication)
        group[plan.rows] = group[plan.cols] = each.group
        nodes.append(dataclasses.replace(
            node, name=node.name if last else unique_name(
                f"{node.name}_{each.rows}x{each.cols}", {n.name for n in graph.nodes}),
            body=KernelBody(name), replication=tuple(replication),
            attributes={**node.attributes, "group": tuple(group), PADDED_GROUPS: True,
                        attribute: (each.rows, each.cols)}))
    graph = _chained(graph, node, nodes, function)
    return dataclasses.replace(module, functions={**module.functions, **functions},
                               graphs={**module.graphs, graph.name: graph})


def _at_least(count: Expr, least: int) -> Expr:
    """1 where ``count`` >= ``least``, else 0 (a size expression)."""
    return Intrinsic("min", (i64(1), Intrinsic("max", (i64(0), count - i64(least - 1)))))


def _chained(graph: Graph, node: Node, nodes: list[Node], function: KernelFunction) -> Graph:
    """``graph`` with ``node`` replaced by ``nodes`` in order (the last
    keeps its name and what it feeds): each reads the node's inputs, the
    first takes its feeds of the outputs, every later one the outputs of
    the one before."""
    outputs = {p.name for p in function.params if p.is_buffer and p.direction != "in"}
    *added, last = nodes
    graph = replace_node(graph, last)
    if not added:
        return graph
    feeds_out = [e for e in graph.edges if e.dst_node == node.name and e.dst_port in outputs]
    binds_out = [b for b in graph.bind_ins if b.dst_node == node.name and b.dst_port in outputs]
    edges = [e for e in graph.edges if e not in feeds_out]
    bind_ins = [b for b in graph.bind_ins if b not in binds_out]
    inputs_edges = [e for e in graph.edges if e.dst_node == node.name and e.dst_port not in outputs]
    inputs_binds = [b for b in graph.bind_ins
                    if b.dst_node == node.name and b.dst_port not in outputs]
    first = added[0].name
    edges += [dataclasses.replace(e, dst_node=first) for e in feeds_out]
    bind_ins += [dataclasses.replace(b, dst_node=first) for b in binds_out]
    for before, after in zip(nodes, nodes[1:]):
        edges += [Edge(before.name, port, after.name, port) for port in sorted(outputs)]
    for each in added:
        edges += [dataclasses.replace(e, dst_node=each.name, kind="all-to-all")
                  for e in inputs_edges]
        bind_ins += [dataclasses.replace(b, dst_node=each.name) for b in inputs_binds]
    order = []
    for existing in graph.nodes:
        order += [*added, existing] if existing.name == last.name else [existing]
    return dataclasses.replace(graph, nodes=tuple(order), edges=tuple(edges),
                               bind_ins=tuple(bind_ins))
