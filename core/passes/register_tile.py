"""``register-tile``: loop nests whose reads are reused across instances
run as register micro-tiles over packed panels.

A kernel node such as ``c[i, j] = sum_k a[i, k] * b[k, j]`` (any loop
body, any epilogue: register_tile_plan.py says which qualify, from their
access patterns) runs one instance per ``chunk`` x ``panel`` block of
its results (register_tile_body.py).  The schedule's transformations, in
the terms of Halide or TVM: the instance space is tiled (``chunk``,
``panel``) and coarsened into register micro-tiles of ``rows`` x
``cols`` results (unroll-and-jam of the loop into the tile: a value read
once serves a whole row or column of the tile); the loop is split into
blocks of ``kblock`` steps; the reads that follow only the columns, and
those that follow only the rows, are packed into contiguous panels per
block (``pack``), so that each step reads one run of whole vectors and
one stream of row values; the columns of a tile are one unrolled loop,
which the back end vectorises.  Targets with work groups take
``form=group`` instead (register_tile_group.py); with ``fill``, launches
too small to make that many work groups run smaller micro-tiles
(register_tile_fill.py).

Sizes left at 0 come from a model of the target: ``vector_bits`` and
``registers`` (vector registers) give a tile of two vectors per row and
as many rows as the registers hold with the reads beside them; blocks
keep the panel (``kblock`` x ``panel``) in a core's L2 and a tile's run
of it in L1.  Targets run the pass with their own sizes (the cpu target:
``Target.passes``); the tuner searches them.  ``nodes`` (``node`` or
``graph.node``) limits it; a named node that does not qualify is refused
with the reason.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import Graph, KernelBody, Module, Node
from .errors import PassError
from .module_tools import iter_nodes, named_kernel_nodes
from .names import unique_name
from .register_tile_body import tiled_body
from .register_tile_group_dim import Grouped, grouping_plan
from .register_tile_schedule import Schedule, tiled_replication
from .register_tile_fill import filled
from .register_tile_group import GroupSchedule
from .register_tile_plan import NestPlan, nest_plan, nest_plans
from .registry import Option, register_pass
from .tensor_graph import replace_node

FORMS = ("private", "group")
SCHEDULE_ATTRIBUTE = "register_tile"
"""Node attribute the pass sets: (rows, cols) of its tiles, for back ends
that make such kernels with their widest vectors."""
KBLOCK = 128
PANEL_BYTES = 1 << 18
"""A packed panel's size: in a core's L2 beside the rows streaming past."""
CHUNK_BLOCKS = 32
"""Most row blocks per instance: each packed value serves this many tiles
(2048^3 on the 2-core Xeon: 8 blocks 1.46x numpy's BLAS, 16 1.40x, 32 1.31x)."""
INTEGER_ROWS = 4
"""Most rows of a tile of integer sums: LLVM 20 took 38 s to compile an
i32 product's 8 x 32 tiles (integer adds reassociate, and its SLP
vectoriser searches their reduction trees), 5 s for 4 x 32."""
GROUP_TILE = 8
"""form=group: results per instance along each dimension (8 x 8 in
registers, as CLBlast's tuned NVIDIA kernels take)."""
GROUP_KBLOCK = 16
LEAST_CHUNK = 32
"""Fewest rows per instance: packing a panel costs about as much as
computing 48 of its rows (tensor_ops/packed_products.py)."""


@register_pass("register-tile", options=[
    Option("rows", int, 0, "rows of results per register tile (0: from the model)", minimum=0,
           maximum=32),
    Option("cols", int, 0, "columns of results per register tile (0: two vectors)",
           minimum=0, maximum=128),
    Option("chunk", int, 0, "rows of results per instance, a multiple of rows (0: up to "
           f"{CHUNK_BLOCKS} tiles, fewer where the cores would go short)", minimum=0,
           maximum=4096),
    Option("panel", int, 0, "columns of results per instance, a multiple of cols (0: model)",
           minimum=0, maximum=4096),
    Option("kblock", int, 0, f"loop steps per packed block (0: {KBLOCK})", minimum=0,
           maximum=65536),
    Option("pack", bool, True, "form=private: copy the reads that follow only the rows or "
           "only the columns into contiguous panels"),
    Option("form", str, "private", "private: an instance's blocks in private panels (CPUs); "
           "group: a work group's blocks in local tiles, a micro-tile per instance (GPUs)",
           choices=FORMS),
    Option("group", int, 16, "form=group: work groups of group x group instances", minimum=1,
           maximum=32),
    Option("fill", int, 0, "form=group: the fewest work groups a launch should make (a GPU's "
           "compute units); smaller micro-tiles where it would make fewer (0: the given "
           "sizes at every size)", minimum=0),
    Option("unroll", int, 0, "form=group: unroll hint of the loop over a block's steps (0: "
           "the compiler's choice)", minimum=0, maximum=64),
    Option("vector_bits", int, 256, "the target's vector width, for the model", minimum=32,
           maximum=2048),
    Option("registers", int, 16, "the target's vector registers, for the model", minimum=4,
           maximum=256),
    Option("cores", int, 16, "instances that run at once, for the model", minimum=1),
    Option("nodes", list, (), "nodes to schedule, as node or graph.node (default: every one "
           "that qualifies)")])
def register_tile(module: Module, rows: int, cols: int, chunk: int, panel: int, kblock: int,
                  pack: bool, form: str, group: int, fill: int, unroll: int, vector_bits: int,
                  registers: int, cores: int, nodes: tuple[str, ...]) -> Module:
    """Run loop nests that reuse reads as register tiles over packed panels."""
    chosen = named_kernel_nodes(module, nodes, "register-tile") if nodes else [
        (g, n) for g, n in iter_nodes(module) if isinstance(n.body, KernelBody)
        and SCHEDULE_ATTRIBUTE not in n.attributes]
    sizes = dict(rows=rows, cols=cols, chunk=chunk, panel=panel, kblock=kblock, pack=pack)
    for graph, node in chosen:
        plans = nest_plans(module, node)
        plan = plans if isinstance(plans, str) else plans[0]
        if SCHEDULE_ATTRIBUTE in node.attributes:
            plan = "is register-tiled already"
        elif form == "group" and not isinstance(plan, str):
            plan = _group_problem(node, plan) or plan
        if isinstance(plan, str):
            if nodes:
                raise PassError(Diagnostic(
                    Location(graph=graph.name, node=node.name),
                    f"register-tile: node '{node.name}' {plan}",
                    "the nodes that qualify: " + (", ".join(eligible_nodes(module)) or "none")))
            continue
        if form == "group":
            schedule = GroupSchedule(rows or GROUP_TILE, cols or GROUP_TILE, group,
                                     kblock or GROUP_KBLOCK, unroll or None)
            module = filled(module, module.graph(graph.name), node, plan, schedule, fill,
                            SCHEDULE_ATTRIBUTE)
        else:
            schedule = model_schedule(plan, vector_bits, registers, cores, **sizes)
            grouped = grouping_plan(plans, len(node.replication))
            module = _scheduled(module, module.graph(graph.name), node, grouped, schedule)
    return module


def eligible_nodes(module: Module) -> list[str]:
    """``graph.node`` of every node the pass can schedule."""
    return [f"{g.name}.{n.name}" for g, n in iter_nodes(module)
            if SCHEDULE_ATTRIBUTE not in n.attributes
            and isinstance(nest_plan(module, n), NestPlan)]


def model_schedule(plan: NestPlan, vector_bits: int, registers: int, cores: int,
                   rows: int = 0, cols: int = 0, chunk: int = 0, panel: int = 0,
                   kblock: int = 0, pack: bool = True) -> Schedule:
    """The given sizes, the others from the target model (module text)."""
    bits = max(acc.type.numpy_dtype.itemsize * 8 for acc in plan.accumulators)
    lanes = max(1, vector_bits // bits)
    cols = cols or 2 * lanes
    if not rows:
        held = registers - 2 - 2 * cols // lanes   # a read per vector, a broadcast
        most = 8 if all(acc.type.is_float for acc in plan.accumulators) else INTEGER_ROWS
        rows = max(1, min(most, held // max(1, len(plan.accumulators) * cols // lanes)))
    fixed = bool(chunk)
    chunk = _multiple(chunk or rows * CHUNK_BLOCKS, rows)
    kblock = kblock or KBLOCK
    element = bits // 8
    panel = _multiple(panel or max(cols, PANEL_BYTES // (kblock * element) // cols * cols),
                      cols)
    return Schedule(rows, cols, chunk, panel, kblock, pack, 0 if fixed else cores,
                    LEAST_CHUNK)


def _group_problem(node: Node, plan: NestPlan) -> str:
    """Why form=group cannot run ``node`` ('' when it can)."""
    if len(node.replication) < 2 or "group" in node.attributes:
        return ("has a work-group size already or fewer than two replication dimensions "
                "(form=group needs two)")
    return ""


def _multiple(value: int, of: int) -> int:
    return max(of, value // of * of)


def _scheduled(module: Module, graph: Graph, node: Node, grouped: Grouped,
               schedule: Schedule) -> Module:
    function = module.function(node.body.function)
    body = tiled_body(function, grouped, schedule, node.replication)
    return _replaced(module, graph, node, function, body,
                     (tiled_replication(grouped, schedule, node.replication),),
                     {SCHEDULE_ATTRIBUTE: (schedule.rows, schedule.cols)})


def _replaced(module: Module, graph: Graph, node: Node, function, body, replication,
              attributes: dict) -> Module:
    new = dataclasses.replace(function, body=body, name=unique_name(
        f"{function.name}_register_tiled", module.functions))
    rewritten = dataclasses.replace(node, body=KernelBody(new.name), replication=replication,
                                    attributes={**node.attributes, **attributes})
    return dataclasses.replace(module, functions={**module.functions, new.name: new},
                               graphs={**module.graphs, graph.name: replace_node(graph,
                                                                                 rewritten)})
