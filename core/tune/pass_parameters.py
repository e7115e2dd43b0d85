"""The tuning parameters each pass exposes, found by analysing the IR
(HPVM2FPGA's static parameter extraction): a boolean per fusible pair
(node-fusion, stencil-fusion),
function with fusible loops or privatisable parameter, an unroll factor
per loop, a parallel form per node with reduction loops."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..ir.graph import Module
from ..passes import PassError, register_tile, run_pipeline, tile
from ..passes.argument_privatisation import eligible_params
from ..passes.loop_fusion import fusible_functions
from ..passes.loop_interchange import interchangeable_loops
from ..passes.loop_tile import tileable_loops
from ..passes.loop_unroll import constant_trip_count, loops_by_id
from ..passes.module_tools import called_functions, node_functions
from ..passes.node_fusion import fusible_pairs
from ..passes.parallel_reduce import eligible_nodes
from ..passes.stencil_fusion import fusible_stencils
from .parameter import Parameter

PASS_PARAMETERS = ("loop-tile", "loop-interchange", "argument-privatisation", "loop-fusion",
                   "stencil-fusion", "node-fusion", "parallel-reduce", "tile", "loop-unroll")
"""The passes whose parameters a space includes by default, in the order
they run."""
UNROLL_FACTORS = (1, 2, 4, 8, 16, 32)
"""Unroll factors offered per loop, besides 0 (as written) and a full
unroll of a constant trip count.  The large ones are for a GPU kernel of
few work items, each a long loop of loads: its copies' loads are in
flight together (backprop's layerforward, 128 x 17 work items over 8,192
rows each, on the H200: 0.70 ms as written, 0.53 / 0.32 / 0.24 ms
unrolled by 8 / 16 / 32)."""
UNROLL_COPIES = "unroll copies"
"""The parameter (and its role) choosing who unrolls the loops given a
factor: loop-unroll's copies, or the back end from the loops' hints.
Neither wins everywhere: on an H200, mriq's tree of lanes (its lane loop
by 4) took 0.0525 ms as copies and 0.0475 as #pragma unroll, backprop's
layerforward (by 8) 0.076 as copies and 0.145 as the pragma."""
MAX_FULL_UNROLL = 64
"""The largest constant trip count offered as a full unroll."""
REDUCE_FORMS = (("tree", 32), ("tree", 64), ("tree", 256), ("chunks", 16), ("chunks", 64),
                ("spread", 65536), ("split", 8), ("split", 32), ("ordered", 8), ("ordered", 32))
"""The (form, lanes) offered per node with reduction loops: a work-group
tree, chunks of partial results (CPU threads), spread (strided chunks
over a whole GPU, then a tree of the partials), or split (chunks of each
instance of a replicated node, the lanes outside its innermost
dimension); chunks and spread only for nodes without replication, split
only for replicated ones.  A kind's likeliest value comes first (the
warm start tries it first).  A tree of 32 lanes (one warp) was the
fastest for mriq's and backprop's sums on an H200 (lanes 8 / 16 / 32 /
64 / 256: compute_q 0.192 / 0.105 / 0.063 / 0.074 / 0.125 ms); split-K
for sgemm 512^3 on an H100, the partials in the default pipeline's
register tiles: split 8 0.0266 ms, 32 0.0456, the default pipeline alone
0.0359."""
REDUCE_KINDS = {"tree": "tree", "chunks": "chunks", "spread": "chunks", "split": "split",
                "ordered": "ordered"}
"""Each form's first parallel-reduce step (eligible_nodes' form)."""
ORDERED_GROUP = 256
"""The ordered form's work-group size: its instances per group are
ORDERED_GROUP // lanes (8 lanes: 32 instances, one warp folding)."""
REASSOCIATED = "reassociated"
"""The last word of a parallel-reduce value that folds float sums in
another order (the space's ``reassociate``)."""


STENCIL_TILES = {f"tile {size} rows {rows}": {"size": size, "rows": rows}
                 for size, rows in ((16, 2), (16, 4), (32, 2))}
"""The tile forms offered per stencil-fusion pair (group side, rows per
work item): on an H200, blur's pair took 0.024 / 0.028 / 0.025 ms so and
camera's 0.064 / 0.062 / 0.062 (the two nodes 0.033 / 0.071; blur
recomputed at each read 0.027)."""
TILE_FORMS = (("matmul", 16), ("matmul", 32), ("stencil", 16))
"""The (form, size) offered per node the tile pass can transform."""
GROUP_TILES = ((8, 4, 16), (8, 8, 16), (4, 8, 16), (4, 4, 16), (4, 2, 16), (2, 2, 16),
               (4, 4, 8))
"""The micro-tiles (rows, cols) and work groups (group x group) offered
per node register-tile's group form can run (blocks of 16 steps): the
large tiles for large products, the small ones so that a small product
still has a work group for every compute unit (sgemm 512^3 on an H200:
128 x 128 results a group make 16 groups for 132 SMs, 0.097 ms; 4 x 4
in 8 x 8 groups, 256 groups, 0.035 ms)."""


def parameters_of_pass(name: str, module: Module, targets=(),
                       reassociate: bool = False) -> list[Parameter]:
    """The parameters pass ``name`` (one of PASS_PARAMETERS) offers on
    ``module`` for the usable ``targets`` (Target objects); with
    ``reassociate``, parallel-reduce's take float sums written as chains
    too."""
    if name == "tile":
        return _tile(module, targets)
    if name == "stencil-fusion":
        return _stencil_fusion(module, targets)
    if name == "parallel-reduce":
        return _parallel_reduce(module, targets, reassociate)
    return _GATHERERS[name](module)


def reduce_steps(label: str, nodes: tuple[str, ...]) -> list:
    """The pipeline steps of a parallel-reduce parameter's value (``form
    lanes``, then REASSOCIATED where it reorders float sums)."""
    form, lanes, reassociate = reduce_of_label(label)
    common = {"nodes": nodes, **({"reassociate": True} if reassociate else {})}
    if form == "ordered":
        return [("parallel-reduce", {"form": "ordered", "lanes": lanes,
                                     "instances": ORDERED_GROUP // lanes, "nodes": nodes})]
    if form == "split":
        return [("parallel-reduce", {"form": "split", "lanes": lanes, "layout": "strided",
                                     **common})]
    if form == "spread":
        return [("parallel-reduce", {"form": "chunks", "lanes": lanes, "layout": "strided",
                                     "grain": 256, **common}),
                ("parallel-reduce", {"form": "tree", **common})]
    return [("parallel-reduce", {"form": form, "lanes": lanes, **common})]


def reduce_of_label(label: str) -> tuple[str, int, bool]:
    """(form, lanes, whether float sums are reassociated) of a
    parallel-reduce parameter's value."""
    form, lanes, *rest = label.split()
    return form, int(lanes), rest == [REASSOCIATED]


def _parallel_reduce(module: Module, targets, reassociate: bool) -> list[Parameter]:
    """A form per node with reduction loops; with ``reassociate``, also
    per node whose loops sum floats in a chain (values that say so).  The
    forms with a work-group tree (tree, spread) only where a listed target
    still claims the node as a tree (the cpu declines barriers); the
    ordered form, which keeps the order, on chains too, and likewise only
    where claimed."""
    parameters = []
    kinds = dict.fromkeys(REDUCE_KINDS.values())
    eligible = {kind: eligible_nodes(module, kind, reassociate) for kind in kinds}
    candidates = dict.fromkeys(ref for refs in eligible.values() for ref in refs)
    promised = {ref for kind in kinds if kind != "ordered"
                for ref in eligible_nodes(module, kind)} if reassociate else set(candidates)
    for ref in candidates:
        graph_name, node = ref.split(".", 1)
        suffix = "" if ref in promised else f" {REASSOCIATED}"
        tree = ("parallel-reduce", {"form": "tree", "lanes": 32, "nodes": (ref,),
                                    "reassociate": bool(suffix)})
        forms = {"tree": ref in eligible["tree"]
                 and _claimed_after(module, tree, graph_name, node, targets),
                 "chunks": ref in eligible["chunks"], "split": ref in eligible["split"],
                 "ordered": ref in eligible["ordered"] and _claimed_after(
                     module, reduce_steps("ordered 8", (ref,))[0], graph_name,
                     node, targets)}
        forms["spread"] = forms["tree"] and forms["chunks"]
        values = ("as written",) + tuple(
            f"{form} {lanes}{'' if form == 'ordered' else suffix}"
            for form, lanes in REDUCE_FORMS if forms[form])
        if len(values) == 1:
            continue
        order = (f" ({REASSOCIATED}: float sums in another order, their rounding changes)"
                 if suffix else "")
        parameters.append(Parameter(f"reduce {ref}", values, "as written",
                                    f"fold the reduction loops of node '{node}' with many "
                                    "instances: a work-group tree, chunks, chunks spread over "
                                    "a GPU then a tree, or terms in lanes added up in order "
                                    f"(ordered) (parallel-reduce){order}",
                                    "parallel-reduce", node))
    return parameters


def _tile(module: Module, targets) -> list[Parameter]:
    """A local-memory schedule per node that some listed target still
    claims once tiled (targets without work groups decline barriers): the
    tile pass's forms, and register-tile's work groups of micro-tiles."""
    parameters = []
    candidates = {ref: [("tile", {"form": form, "size": size}, f"{form} {size}")
                        for form, size in TILE_FORMS
                        if ref in tile.eligible_nodes(module, form, size)]
                  for ref in tile.eligible_nodes(module)}
    for ref in register_tile.eligible_nodes(module):
        candidates.setdefault(ref, []).extend(
            ("register-tile", group_options(rows, cols, group),
             f"group {group_size_label(rows, cols, group)}")
            for rows, cols, group in GROUP_TILES)
    for ref, forms in sorted(candidates.items()):
        graph_name, node = ref.split(".", 1)
        values = [label for name, options, label in forms
                  if _claimed_after(module, (name, {**options, "nodes": (ref,)}), graph_name,
                                    node, targets)]
        if values:
            parameters.append(Parameter(
                f"tile {ref}", ("as written", *values), "as written",
                f"share the work group's reads of node '{node}' through local memory: a k loop "
                "in blocks (matmul), a neighbourhood tile (stencil), with size x size groups "
                "(tile), or blocks of reads for a micro-tile of results per instance (group "
                "rows x cols: register-tile)", "tile", node))
    return parameters


def _claimed_after(module: Module, step, graph_name: str, node: str, targets) -> bool:
    """Whether pass ``step`` (name, options) takes ``module`` and a listed
    target still claims node ``node`` of graph ``graph_name`` after it."""
    try:
        changed = run_pipeline(module, [step])
    except PassError:
        return False
    graph = changed.graph(graph_name)
    return any(t.claims(changed, graph, graph.node(node)) for t in targets)


def group_options(rows: int, cols: int, group: int = 16) -> dict:
    """register-tile's options for a group form of ``rows`` x ``cols``
    results an instance in ``group`` x ``group`` work groups."""
    options = {"form": "group", "rows": rows, "cols": cols, "unroll": 16}
    return options if group == 16 else {**options, "group": group}


def group_size_label(rows: int, cols: int, group: int) -> str:
    """The size of a group form in a tile parameter's value: ``8x4``
    (16 x 16 work groups, the pass's default) or ``4x4/8x8``."""
    return f"{rows}x{cols}" + ("" if group == 16 else f"/{group}x{group}")


def group_of_label(size: str) -> dict:
    """register-tile's options for a size ``group_size_label`` wrote."""
    tile, _, group = size.partition("/")
    rows, cols = map(int, tile.split("x"))
    return group_options(rows, cols, int(group.split("x")[0]) if group else 16)


def _node_fusion(module: Module) -> list[Parameter]:
    return [Parameter(f"fuse {pair}", (False, True), False, "fuse node '{}' into its consumer "
                      "'{}' (node-fusion)".format(*pair.split(":")),
                      "node-fusion", pair) for pair in fusible_pairs(module)]


def _stencil_fusion(module: Module, targets) -> list[Parameter]:
    """Per pair: as written, recomputed at each read (True), or computed
    per work group in a local tile (a STENCIL_TILES label), where a listed
    target still claims the fused node (targets without work groups
    decline barriers)."""
    parameters = []
    for pair in fusible_stencils(module):
        producer, consumer = pair.split(":")
        graph_name = next(g.name for g in module.graphs.values()
                          if consumer in {n.name for n in g.nodes})
        tiles = [label for label, options in STENCIL_TILES.items()
                 if _claimed_after(module, ("stencil-fusion", {"pairs": (pair,), "form": "tile",
                                                               **options}),
                                   graph_name, consumer, targets)]
        parameters.append(Parameter(
            f"recompute {pair}", (False, True, *tiles), False,
            f"fold node '{producer}' into its consumer '{consumer}', which recomputes each "
            "element where it reads it (yes) or once per work group into a local tile "
            "(tile: group side, rows per work item) (stencil-fusion)", "stencil-fusion", pair))
    return parameters


def stencil_fusion_steps(chosen: dict[str, Any]) -> list:
    """The stencil-fusion steps of the pairs chosen, by value (True or a
    STENCIL_TILES label)."""
    steps = []
    for value in dict.fromkeys(chosen.values()):
        pairs = tuple(pair for pair, v in chosen.items() if v == value)
        form = {} if value is True else {"form": "tile", **STENCIL_TILES[value]}
        steps.append(("stencil-fusion", {"pairs": pairs, **form}))
    return steps


def _loop_fusion(module: Module) -> list[Parameter]:
    return [Parameter(f"fuse loops @{name}", (False, True), False,
                      f"fuse the adjacent loops of function '@{name}' (loop-fusion)",
                      "loop-fusion", name) for name in fusible_functions(module)]


def _loop_interchange(module: Module) -> list[Parameter]:
    return [Parameter(f"interchange {loop_id}", (False, True), False,
                      f"swap loop '{loop_id}' with the loop nested in it (loop-interchange)",
                      "loop-interchange", loop_id) for loop_id in interchangeable_loops(module)]


BLOCK_SIZES = (16, 32, 64, 128)
"""Iterations of each loop in a block offered per nest (loop-tile): a + b^T
at 2048^2 on the 2-core VM took 14.5 / 12.2 / 10.2 / 12.2 ms in blocks
of 16 / 32 / 64 / 128, 39 ms unblocked."""


def _loop_tile(module: Module) -> list[Parameter]:
    return [Parameter(f"block {loop_id}", (0, *BLOCK_SIZES), 0,
                      f"run the nest of loop '{loop_id}' in blocks of that many iterations of "
                      "each loop (loop-tile; 0: as written)", "loop-tile", loop_id)
            for loop_id in tileable_loops(module)]


def _privatisation(module: Module) -> list[Parameter]:
    return [Parameter(f"privatise {name}", (False, True), False,
                      f"give parameter '{name.split('.')[1]}' of '@{name.split('.')[0]}' a private "
                      "copy per instance (argument-privatisation)", "argument-privatisation", name)
            for name in eligible_params(module)]


def _unroll(module: Module) -> list[Parameter]:
    """One unroll factor per loop; functions that are copies of one another
    (a front end makes one per node of an unrolled graph) share theirs."""
    kernels = [module.functions[name] for name in sorted(node_functions(module)
                                                         | called_functions(module))
               if name in module.functions]
    parameters = []
    for first, copies in _copies(kernels):
        loops = [list(loops_by_id(function).items()) for function in [first] + copies]
        for position, (loop_id, loop) in enumerate(loops[0]):
            trips = constant_trip_count(loop)
            if trips is not None and trips <= 1:
                continue
            factors = [f for f in UNROLL_FACTORS if trips is None or f < trips]
            full = trips is not None and trips <= MAX_FULL_UNROLL
            if full:
                factors.append(trips)
            about = f"unroll factor of loop '{loop.var}' in '@{first.name}'" + \
                (f" and its {len(copies)} copies" if len(copies) > 1 else
                 " and its copy" if copies else "") + \
                (f" ({trips} iterations)" if trips is not None else "")
            ids = tuple(each[position][0] for each in loops)
            parameters.append(Parameter(f"unroll {loop_id}", (0, *factors), 0, about,
                                        "loop-unroll", (ids, full)))
    if parameters:
        parameters.append(Parameter(
            UNROLL_COPIES, (True, False), True,
            "unroll the loops given a factor into copies in the IR (yes), or pass the factor "
            "to the back end (no: OpenCL's #pragma unroll, LLVM's unroll metadata)",
            UNROLL_COPIES))
    return parameters


def _copies(functions) -> list[tuple]:
    """``functions`` grouped by body: (first, [the others with the same
    parameters and body])."""
    groups: list[tuple] = []
    for function in functions:
        for first, copies in groups:
            if dataclasses.replace(function, name=first.name) == first:
                copies.append(function)
                break
        else:
            groups.append((function, []))
    return groups


_GATHERERS = {"node-fusion": _node_fusion, "loop-fusion": _loop_fusion,
              "loop-interchange": _loop_interchange, "loop-tile": _loop_tile,
              "argument-privatisation": _privatisation, "loop-unroll": _unroll}
