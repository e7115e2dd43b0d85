"""``tile``: reads a work group shares go through local memory (GPUs).

For kernel nodes with two replication dimensions.  The node runs in work
groups of ``size`` x ``size`` instances (attribute ``group``), whole
(``padded_groups``: on sizes that are not multiples, the extra instances
take part in the copies and barriers and do nothing else), so any size
works.  Two forms (tile_forms.py builds the bodies):

- ``form=matmul``: a top-level loop over ``k`` with the same bounds in
  every instance reads buffers as ``X[f, k]`` or ``X[k, g]``, ``f`` varying
  only along replication dimension 0 and ``g`` only along 1 (a matrix
  product's rows of A and columns of B).  The loop runs in blocks of
  ``size`` iterations: the group copies each block of those reads into a
  local tile (one element per instance), meets at a barrier, runs the
  block from the tiles, and meets again.  Iterations keep their order, so
  results are bit-identical.  Statements before the loop must not read
  memory (the extra instances run them).
- ``form=stencil``: every read of a two-dimensional input buffer read more
  than once (a neighbourhood) goes through a local tile of the group's
  region of it, widened by ``halo`` on every side and copied by the whole
  group first (tile_forms.fill_tile, as stencil-fusion's tiles are
  filled); a read known to lie within ``halo`` of its instance reads the
  tile directly, any other is tested, and one outside the tile (a far
  neighbour) reads the buffer as before.

``form=auto`` (default) takes matmul where it applies, else stencil.
Targets without work groups (cpu) decline tiled nodes.  Options ``nodes``
(``node`` or ``graph.node``; default every eligible one) are the DSE's
knobs; a named node that is not eligible is refused with the reason.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.graph import PADDED_GROUPS, Graph, KernelBody, Module, Node
from ..ir.kernel import (
    ArrayDecl, Assign, Barrier, Call, For, KernelFunction, Let, Load, Return, Store, While,
)
from ..ir.uniformity import Uniformity
from ..ir.visit import walk
from .errors import PassError
from .module_tools import iter_nodes, named_kernel_nodes
from .names import NameGenerator, function_names, unique_name
from .registry import Option, register_pass
from .tensor_graph import replace_node
from .tile_forms import blocked_reads, matmul_body, stencil_body

FORMS = ("auto", "matmul", "stencil")
MAX_LOCAL_BYTES = 32768
"""Local memory the tiles of one node may take (every OpenCL GPU has it)."""


@register_pass("tile", options=[
    Option("form", str, "auto", "matmul: a k loop in blocks through row and column tiles; "
           "stencil: a group's neighbourhood of each input through a tile; auto: matmul "
           "where it applies, else stencil", choices=FORMS),
    Option("size", int, 16, "work-group side: groups of size x size instances", minimum=2,
           maximum=32),
    Option("halo", int, 1, "stencil: elements the tile reaches past the group on every side",
           minimum=0, maximum=16),
    Option("nodes", list, (), "nodes to tile, as node or graph.node (default: every "
           "eligible one)")])
def tile(module: Module, form: str, size: int, halo: int, nodes: tuple[str, ...]) -> Module:
    """Share a work group's reads through local memory."""
    chosen = named_kernel_nodes(module, nodes, "tile") if nodes else [
        (g, n) for g, n in iter_nodes(module) if isinstance(n.body, KernelBody)]
    plans = []
    for graph, node in chosen:
        plan = node_plan(module, node, form, size, halo)
        if isinstance(plan, str) and nodes:
            raise PassError(Diagnostic(
                Location(graph=graph.name, node=node.name, function=node.body.function),
                f"tile: node '{node.name}' {plan}",
                f"the eligible nodes are: "
                f"{', '.join(eligible_nodes(module, form, size, halo)) or 'none'}"))
        if not isinstance(plan, str):
            plans.append((graph.name, node.name, plan))
    for graph_name, node_name, plan in plans:
        graph = module.graph(graph_name)
        module = _tiled(module, graph, graph.node(node_name), plan, size, halo)
    return module


def eligible_nodes(module: Module, form: str = "auto", size: int = 16,
                   halo: int = 1) -> list[str]:
    """``graph.node`` of every node tile can transform."""
    return [f"{g.name}.{n.name}" for g, n in iter_nodes(module)
            if isinstance(n.body, KernelBody)
            and not isinstance(node_plan(module, n, form, size, halo), str)]


def node_plan(module: Module, node: Node, form: str, size: int, halo: int):
    """``("matmul", loop index, reads)`` or ``("stencil", buffers)`` for
    ``node``, or why it cannot be tiled."""
    if not isinstance(node.body, KernelBody):
        return "is not a kernel node"
    if len(node.replication) != 2:
        return (f"has {len(node.replication)} replication dimension(s); tiles are for "
                "two (a matrix, an image)")
    if "group" in node.attributes:
        return "has a work-group size already (attribute 'group')"
    function = module.function(node.body.function)
    for item in walk(function.body):
        if isinstance(item, Barrier) or (isinstance(item, ArrayDecl) and item.space == "local"):
            return "already synchronises its work group (a barrier or a local array)"
        if isinstance(item, Call):
            return f"calls '@{item.function}' (run inline first)"
    problems = []
    if form in ("auto", "matmul"):
        plan = _matmul_plan(function, size)
        if not isinstance(plan, str):
            return plan
        problems.append(plan)
    if form in ("auto", "stencil"):
        plan = _stencil_plan(function, size, halo)
        if not isinstance(plan, str):
            return plan
        problems.append(plan)
    return "; ".join(problems)


def _matmul_plan(function: KernelFunction, size: int):
    tileable = _read_only_matrices(function)
    uniform = Uniformity(function, (0, 1))
    for index, stmt in enumerate(function.body):
        if not isinstance(stmt, For):
            if isinstance(stmt, (Let, Assign)) and stmt.value is not None and any(
                    isinstance(n, Load) for n in walk(stmt.value)):
                return ("matmul: reads memory before its loop (instances outside the "
                        "replication run that part)")
            if not isinstance(stmt, (Let, Assign)):
                return (f"matmul: a {type(stmt).__name__.lower()} statement before its loop "
                        "(only variables may be set there)")
            continue
        if stmt.step != 1:
            return f"matmul: loop '{stmt.var}' steps by {stmt.step}, not 1"
        if any(uniform.is_varying(bound) or any(isinstance(n, Load) for n in walk(bound))
               for bound in (stmt.start, stmt.stop)):
            return (f"matmul: the bounds of loop '{stmt.var}' differ between instances (the "
                    "group's barriers need the same trip count everywhere)")
        if any(isinstance(n, (Return, Barrier)) for n in walk(stmt.body)):
            return f"matmul: loop '{stmt.var}' returns"
        reads = blocked_reads(function, stmt, tileable)
        if not reads:
            return (f"matmul: loop '{stmt.var}' reads no matrix as X[f, {stmt.var}] or "
                    f"X[{stmt.var}, g] with f, g varying along one replication dimension")
        element_bytes = max(load.type.numpy_dtype.itemsize for load, _ in reads)
        tiles = len({read for _, read in reads})
        if tiles * size * size * element_bytes > MAX_LOCAL_BYTES:
            return f"matmul: {tiles} tiles of {size}x{size} exceed {MAX_LOCAL_BYTES} bytes"
        return "matmul", index, reads
    return "matmul: has no loop at the top of its body"


def _stencil_plan(function: KernelFunction, size: int, halo: int):
    """The inputs read as neighbourhoods: X[r, c] with r varying along
    replication dimension 0 and c along 1, at two places or in a loop."""
    tileable = _read_only_matrices(function)
    along_rows, along_columns = Uniformity(function, (0,)), Uniformity(function, (1,))

    def neighbourhood(load: Load) -> bool:
        return (load.buffer in tileable and len(load.indices) == 2
                and along_rows.is_varying(load.indices[0])
                and along_columns.is_varying(load.indices[1]))

    loads = [n for n in walk(function.body) if isinstance(n, Load) and neighbourhood(n)]
    in_loops = {n.buffer for loop in walk(function.body) if isinstance(loop, (For, While))
                for n in walk(loop.body) if isinstance(n, Load) and neighbourhood(n)}
    buffers = sorted({load.buffer for load in loads
                      if sum(other.buffer == load.buffer for other in loads) > 1
                      or load.buffer in in_loops})
    if not buffers:
        return ("stencil: reads no two-dimensional input as a neighbourhood (X[r, c] with r "
                "following replication dimension 0 and c dimension 1, twice or in a loop)")
    params = {p.name: p for p in function.params}
    extent = size + 2 * halo
    total = sum(extent * extent * params[b].type.element.numpy_dtype.itemsize for b in buffers)
    if total > MAX_LOCAL_BYTES:
        return (f"stencil: tiles of {extent}x{extent} for {', '.join(buffers)} take {total} "
                f"bytes, over {MAX_LOCAL_BYTES} (give a smaller size or halo)")
    return "stencil", buffers


def _read_only_matrices(function: KernelFunction) -> set[str]:
    written = {n.buffer for n in walk(function.body) if isinstance(n, Store)}
    return {p.name for p in function.params if p.is_buffer and p.direction == "in"
            and len(p.type.shape) == 2 and p.name not in written}


def _tiled(module: Module, graph: Graph, node: Node, plan: tuple, size: int,
           halo: int) -> Module:
    function = module.function(node.body.function)
    names = NameGenerator(function_names(function))
    if plan[0] == "matmul":
        body = matmul_body(function, plan[1], size, plan[2], names)
    else:
        body = stencil_body(function, plan[1], size, halo, names, tuple(node.replication))
    new = dataclasses.replace(function, name=unique_name(f"{function.name}_tiled",
                                                         module.functions), body=body)
    rewritten = dataclasses.replace(node, body=KernelBody(new.name), attributes={
        **node.attributes, "group": (size, size), PADDED_GROUPS: True})
    new_graph = replace_node(graph, rewritten)
    return dataclasses.replace(module, functions={**module.functions, new.name: new},
                               graphs={**module.graphs, graph.name: new_graph})
