"""The pass steps a configuration of a space stands for (space.py's
``Space.realise``), in three phases over the module as each leaves it:

- graph steps: loop-tile (one step per block size), loop-interchange,
  argument-privatisation, loop-fusion, stencil-fusion recomputing,
  node-fusion (a nest in a function whose loops are fused keeps its
  order and its loops); a fusion of nodes placed apart, or naming a
  node a recomputation folded away, is left with a note;
- tile steps: stencil-fusion in local tiles, on the stencil's node as
  node-fusion left it;
- node steps: the per-node forms (parallel-reduce, tile, register-tile)
  on the nodes the fusions left, where they still apply.

Nodes are followed through the fusions by the ORIGIN attribute that
``realise`` stamps on every leaf (node-fusion's node keeps its
producer's, stencil-fusion's its consumer's).  What is not applied is
said in ``notes``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import Module
from ..ir.kernel import For
from ..ir.visit import rewrite, walk
from ..passes import PassError, register_tile, run_pipeline, tile
from ..passes.module_tools import map_functions, named_kernel_nodes
from ..passes.parallel_reduce import eligible_nodes as reduce_eligible
from ..target import NodeRef
from .parameter import Parameter
from .pass_parameters import (
    REDUCE_KINDS, group_of_label, reduce_of_label, reduce_steps, stencil_fusion_steps,
)

ORIGIN = "tune_origin"
"""Node attribute naming the source node while a realisation runs its
passes (node-level knobs then find the node a fusion made)."""


@dataclass
class StepPlan:
    """The steps of one configuration: ``values`` by parameter name,
    ``by_role`` the space's parameters by role, ``placed`` the target
    of each leaf node (``graph.node``)."""

    module: Module
    """The module the space was made for (the names the values use)."""
    values: dict[str, Any]
    by_role: dict[str, list[Parameter]]
    placed: dict[str, str]
    notes: list[str] = field(default_factory=list)

    def graph_steps(self) -> list:
        """The steps of the parameters that rewrite the graph (fusions,
        privatisation), which run first."""
        sizes: dict[int, list[str]] = {}
        for p in self.by_role.get("loop-tile", ()):
            if self.values[p.name] and not self._fused_loops(p.subject, "block"):
                sizes.setdefault(self.values[p.name], []).append(p.subject)
        steps: list = [("loop-tile", {"loops": tuple(loops), "size": size})
                       for size, loops in sorted(sizes.items())]
        folded: set[str] = set()
        for role, option in (("loop-interchange", "loops"), ("argument-privatisation", "params"),
                             ("loop-fusion", "functions"), ("stencil-fusion", "pairs"),
                             ("node-fusion", "pairs")):
            chosen = [p.subject for p in self.by_role.get(role, ()) if self.values[p.name] is True
                      or role != "stencil-fusion" and self.values[p.name]]
            if role == "loop-interchange":
                chosen = [loop for loop in chosen if not self._fused_loops(loop, "interchange")]
            if role.endswith("-fusion") and role != "loop-fusion":
                chosen = [pair for pair in chosen if self._same_place(pair)
                          and not self._folded(pair, folded)]
            if role == "stencil-fusion":
                folded = {pair.split(":")[0] for pair in chosen}
            if chosen:
                steps.append((role, {option: tuple(chosen)}))
        return steps

    def _fused_loops(self, loop_id: str, what: str) -> bool:
        """Whether loop-fusion rewrites the function of ``loop_id`` (then
        its nests keep their order and their loops, with a note saying
        ``what`` is not applied)."""
        function = loop_id.partition(".")[0]
        if not any(p.subject == function and self.values[p.name]
                   for p in self.by_role.get("loop-fusion", ())):
            return False
        self.notes.append(f"{what} {loop_id} is not applied: loop-fusion rewrites the loops "
                          f"of '@{function}'")
        return True

    def tile_steps(self, module: Module) -> tuple[Module, list]:
        """``module`` after the stencil pairs computed in local tiles, and
        their steps, which run after node-fusion (the stencil's node may
        have taken its consumers in; a fused node keeps its producer's
        origin), on the pairs as named now."""
        now = origins(module)
        steps = []
        for p in self.by_role.get("stencil-fusion", ()):
            value = self.values[p.name]
            if not isinstance(value, str) or not self._same_place(p.subject):
                continue
            producer, consumer = p.subject.split(":")
            if producer not in now or consumer not in now:
                self.notes.append(f"{p.name} = {value}: not applied: a fusion merged its "
                                  "nodes into others")
                continue
            step = stencil_fusion_steps({f"{now[producer]}:{now[consumer]}": value})
            try:
                module = run_pipeline(module, step)
            except PassError as error:
                reason = error.diagnostics[0].message
                self.notes.append(f"{p.name} = {value}: not applied: {reason}")
                continue
            steps += step
        return module, steps

    def _folded(self, pair: str, folded: set[str]) -> bool:
        """Whether a node of a node-fusion ``pair`` was folded into its
        consumer by stencil-fusion (it is gone then)."""
        gone = [node for node in pair.split(":") if node in folded]
        if gone:
            self.notes.append(f"fuse {pair}: not fused, stencil-fusion recomputes '{gone[0]}' "
                              "in its consumer")
        return bool(gone)

    def node_steps(self, module: Module) -> list:
        """The steps of the per-node forms (parallel-reduce, tile), on the
        nodes the graph steps left: a node fused into its producer is
        gone, and one a fusion changed may no longer take its form (a
        stencil's reads recomputed), nor a tile one a reduction's form
        changed (its lanes a dimension more); such forms are not applied
        (a note says so)."""
        now = origins(module)

        def surviving(role: str, nodes: tuple[str, ...], eligible: list[str]) -> tuple[str, ...]:
            """``nodes`` (``node`` or ``graph.node``) as named now, where the
            form still applies; ``eligible``: ``graph.node`` of those it does."""
            takes_form = set(eligible) | {ref.split(".", 1)[1] for ref in eligible}
            kept = []
            for ref in nodes:
                if ref not in now:
                    self.notes.append(f"{role} of node '{ref}' not applied: a fusion merged "
                                      "the node into another")
                elif now[ref] not in takes_form:
                    self.notes.append(f"{role} of node '{ref}' not applied: the fusions "
                                      "chosen with it changed the node, and the form no "
                                      "longer applies")
                else:
                    kept.append(now[ref])
            return tuple(kept)

        steps = []
        for label, nodes in _nodes_by_value(self.values, self.by_role.get("parallel-reduce", ())):
            form, _, reassociate = reduce_of_label(label)
            nodes = surviving("parallel-reduce", nodes,
                              reduce_eligible(module, REDUCE_KINDS[form], reassociate))
            steps += reduce_steps(label, nodes) if nodes else []
        reduced = run_pipeline(module, steps) if steps else module
        for form_size, nodes in _nodes_by_value(self.values, self.by_role.get("tile", ())):
            form, size = form_size.split()
            if form == "group":
                nodes = surviving("tile", nodes, register_tile.eligible_nodes(reduced))
                if nodes:
                    steps.append(("register-tile", {**group_of_label(size), "nodes": nodes}))
            else:
                nodes = surviving("tile", nodes, tile.eligible_nodes(reduced, form, int(size)))
                if nodes:
                    steps.append(("tile", {"form": form, "size": int(size), "nodes": nodes}))
        return steps

    def _same_place(self, pair: str) -> bool:
        graph_of = {node.name: graph.name for graph in self.module.graphs.values()
                    for node in graph.nodes}
        producer, consumer = pair.split(":")
        where = [self.placed.get(str(NodeRef(graph_of[n], n))) for n in (producer, consumer)]
        if where[0] != where[1]:
            self.notes.append(f"fuse {pair}: not fused, its nodes run on {where[0]} and {where[1]}")
            return False
        return True


def origins(module: Module) -> dict[str, str]:
    """A node as the configuration named it (the ORIGIN stamp; ``node`` or
    ``graph.node``) -> its name now, in the same form."""
    names = {}
    for graph in module.graphs.values():
        for node in graph.nodes:
            if ORIGIN in node.attributes:
                names[node.attributes[ORIGIN]] = node.name
                names[f"{graph.name}.{node.attributes[ORIGIN]}"] = f"{graph.name}.{node.name}"
    return names


def _nodes_by_value(values: dict, parameters) -> list[tuple[str, tuple[str, ...]]]:
    """(value, the nodes given it) of per-node form parameters, "as
    written" left out: one pass step per form."""
    chosen: dict[str, list[str]] = {}
    for p in parameters:
        if values[p.name] != "as written":
            chosen.setdefault(values[p.name], []).append(p.subject)
    return [(value, tuple(nodes)) for value, nodes in chosen.items()]


def products_kept_whole(module: Module, notes: list[str]) -> Module:
    """``module`` without the unroll factors of the loops of the nodes
    register-tile takes (a note each): the default pipeline that runs
    after the tuned passes tiles them, and a loop unrolled into copies
    (a main loop and a remainder) is no product it can tile (sgemm 512^3
    on an H100, split 8 with its k loop in copies of 4: 0.33 ms; tiled,
    0.027)."""
    tiled = {node.body.function: f"{graph.name}.{node.name}" for graph, node in
             named_kernel_nodes(module, register_tile.eligible_nodes(module), "register-tile")}

    def whole(function):
        if function.name not in tiled or not any(
                isinstance(n, For) and n.unroll not in (None, 1) for n in walk(function.body)):
            return function
        notes.append(f"the unroll factors of '@{function.name}' are left to register-tile: "
                     f"the default pipeline tiles node '{tiled[function.name]}'")
        return dataclasses.replace(function, body=rewrite(
            function.body, lambda n: dataclasses.replace(n, unroll=None)
            if isinstance(n, For) else None))
    return map_functions(module, whole)
