"""The design space of a program: every parameter the tuner may set,
found by analysing the IR (HPVM2FPGA's static parameter extraction).

    from hpvm.tune import space
    design = space(module, ["gpu_opencl", "cpu"])
    print(design.describe())
    realised = design.realise(design.defaults())   # module after passes, options

A parameter comes from one of four places, and says in words what it acts
on:

- **placement** (when more than one target is listed): one per leaf node
  without a hint that more than one listed target claims: which of them
  runs it.  Hints stay hard constraints.  Realised as the node's hint.
- **passes** (``passes=``, by default all seven): a boolean per fusible
  producer/consumer pair (node-fusion), per producer a stencil may
  recompute or compute per work group in local tiles (stencil-fusion: no,
  yes, or a tile form where a listed target takes the fused node), per function with fusible loops
  (loop-fusion) and per eligible ``private`` parameter
  (argument-privatisation); a form per node with reduction loops
  (parallel-reduce: as written, a work-group tree or chunks, with a lane
  count); a tile form per two-dimensional node a listed target still claims
  once tiled (tile: matmul or stencil, group side); an unroll factor per
  kernel loop (loop-unroll; 0 keeps the loop
  as written, a constant trip count unrolls fully; functions that are
  copies of one another share their loops' factors).  Found by
  pass_parameters.py; realised as one pass pipeline, in the order
  argument-privatisation, loop-fusion, stencil-fusion (recomputing),
  node-fusion, stencil-fusion (in tiles, on the stencil's node as node-fusion
  left it), parallel-reduce, tile, loop-unroll, dce; unroll factors travel as the
  loops' ``unroll`` hints, so they survive the passes before them, and the
  per-node forms follow a node into a fusion (node-fusion's node keeps the
  producer's, stencil-fusion's the consumer's); a node-fusion pair whose
  node stencil-fusion folded away is left, with a note.
- **targets**: each listed target's ``Target.knobs`` for the nodes it
  claims (work-group shape, vector lanes ...), realised as its options.
- **the runtime**: task parallelism on or off, for programs of more than
  one node.
- **the default pipeline**: whether the first target's default pipeline
  (what ``pipeline="default"`` compiles) runs after the tuned passes,
  where that target has one: a parameter of the search, since the
  fusions and forms above span what such a pipeline does only when
  several of them are set together (camera on the H200: the default
  pipeline won every run, and no sample of 30 set its forms together);
  the tuner's confirmation step measures the defaults with it too.

The defaults are the program as written (no pass, the targets' defaults):
the untuned baseline a tuned result is compared with.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..ir.graph import Module
from ..ir.text import print_module
from ..passes import PassError, format_pipeline, register_tile, run_pipeline, tile
from ..passes.loop_unroll import with_unroll_hints
from ..passes.module_tools import map_nodes
from ..passes.parallel_reduce import eligible_nodes as reduce_eligible
from ..registry import get_registry
from ..runtime.compiler import as_module
from ..runtime.placement import takes
from ..target import NodeRef
from .parameter import Parameter, TuneError
from .pass_parameters import (
    PASS_PARAMETERS, group_of_label, parameters_of_pass, reduce_steps, stencil_fusion_steps,
)

ORIGIN = "tune_origin"
"""Node attribute naming the source node while a realisation runs its
passes (node-level knobs then find the node a fusion made)."""
DEFAULT_PIPELINE = "default pipeline"
"""The parameter naming whether the first target's default pipeline runs."""


@dataclass
class Realisation:
    """What a configuration means for the compiler: the module after the
    configuration's passes and hints, the compile options (core options
    and one section per target), the pipeline that was run, and notes
    (parameters that had no effect, and why)."""

    module: Module
    options: dict
    pipeline: str
    notes: list[str] = field(default_factory=list)


class Space:
    """The parameters of one program on an ordered list of targets."""

    def __init__(self, module: Module, targets: list[str], parameters: list[Parameter],
                 placed: dict[str, str | None] | None = None):
        self.module = module
        self.targets = list(targets)
        self.placed = dict(placed or {})
        """Where each leaf node runs without tuning (node ref -> target)."""
        self.parameters = tuple(parameters)
        self._by_name = {p.name: p for p in self.parameters}
        self.digest = module_digest(module)

    def __len__(self) -> int:
        return len(self.parameters)

    def __repr__(self) -> str:
        return (f"<Space of '{self.module.name}' on {', '.join(self.targets)}: "
                f"{len(self.parameters)} parameters, {self.size} configurations>")

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.parameters)

    def parameter(self, name: str) -> Parameter:
        try:
            return self._by_name[name]
        except KeyError:
            raise TuneError(f"the space has no parameter '{name}' (fix: use one of "
                            f"{_listing(self._by_name)})") from None

    def pinned(self, values: dict[str, Any]) -> "Space":
        """The space of the other parameters, for a search with ``values``
        fixed (the caller adds them back before realising)."""
        kept = [p for p in self.parameters if p.name not in values]
        return Space(self.module, self.targets, kept, self.placed)

    @property
    def size(self) -> int:
        """The number of distinct configurations."""
        return math.prod(len(p.values) for p in self.parameters)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.parameters}

    def default_pipeline(self) -> dict[str, Any] | None:
        """The defaults with the first target's default pipeline, or None
        where the space has no such parameter."""
        if DEFAULT_PIPELINE not in self._by_name:
            return None
        return {**self.defaults(), DEFAULT_PIPELINE: True}

    def as_written(self) -> dict[str, Any]:
        """The defaults, except parameters whose default transforms the
        program (a target's schedule): those as written."""
        return {p.name: p.default if p.as_written is None else p.as_written
                for p in self.parameters}

    def checked(self, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` completed with defaults, each value the parameter's
        own (a JSON list becomes the tuple it stands for); TuneError naming
        an unknown parameter or a value it does not admit."""
        result = self.defaults()   # a confirmed-only parameter only where given
        for name, value in values.items():
            parameter = self.parameter(name)
            try:
                result[name] = parameter.values[parameter.index_of(value)]
            except ValueError:
                raise TuneError(f"parameter '{name}' cannot be {value!r} (fix: use one of "
                                f"{', '.join(map(repr, parameter.values))})") from None
        return result

    def enumerate(self) -> Iterator[dict[str, Any]]:
        """Every configuration, the defaults first."""
        names = [p.name for p in self.parameters]
        orders = [sorted(p.values, key=lambda v, p=p: v != p.default) for p in self.parameters]
        for combination in itertools.product(*orders):
            yield dict(zip(names, combination))

    def describe(self, values: dict[str, Any] | None = None) -> str:
        """A table of the parameters: name, values (or the chosen value),
        and what each acts on."""
        rows = []
        for p in self.parameters:
            shown = p.label(values[p.name]) if values is not None else \
                " | ".join(p.label(v) for v in p.values)
            rows.append((p.name, shown, p.about))
        if not rows:
            return "(no parameters)"
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows)

    def realise(self, values: dict[str, Any]) -> Realisation:
        """The module and options a configuration stands for (see the
        module docstring); a pass that refuses raises its PassError."""
        values = self.checked(values)
        by_role: dict[str, list[Parameter]] = {}
        for p in self.parameters:
            by_role.setdefault(p.role, []).append(p)
        chosen = {p.subject: values[p.name] for p in by_role.get("placement", ())}
        placed = {**self.placed, **chosen}

        def stamp(graph, node):
            if not node.is_leaf:
                return node
            hint = chosen.get(str(NodeRef(graph.name, node.name)), node.hint)
            return dataclasses.replace(node, hint=hint,
                                       attributes={**node.attributes, ORIGIN: node.name})

        module = map_nodes(self.module, stamp)
        hints = {loop_id: values[p.name] for p in by_role.get("loop-unroll", ())
                 if values[p.name] for loop_id in p.subject[0]}
        if hints:
            module = with_unroll_hints(module, hints)
        notes: list[str] = []
        steps = self._graph_steps(values, by_role, placed, notes)
        if steps:
            module = run_pipeline(module, steps)
        tiled = self._tile_steps(values, by_role, placed, module, notes)
        if tiled:
            module = run_pipeline(module, tiled)
            steps += tiled
        node_steps = self._node_steps(values, by_role, module, notes)
        if hints:
            node_steps.append(("loop-unroll", {}))
        steps += node_steps
        if steps:
            module = run_pipeline(module, node_steps + [("dce", {})])
        origins = {}

        def unstamp(graph, node):
            if ORIGIN not in node.attributes:
                return node
            origins[node.name] = node.attributes[ORIGIN]
            return dataclasses.replace(node, attributes={k: v for k, v in node.attributes.items()
                                                         if k != ORIGIN})

        module = map_nodes(module, unstamp)
        options = self._options(values, by_role, origins)
        return Realisation(module, options, format_pipeline(steps + [("dce", {})]) if steps else "",
                           notes)

    def _graph_steps(self, values, by_role, placed, notes) -> list:
        """The steps of the parameters that rewrite the graph (fusions,
        privatisation), which run first."""
        steps = []
        folded: set[str] = set()
        for role, option in (("argument-privatisation", "params"), ("loop-fusion", "functions"),
                             ("stencil-fusion", "pairs"), ("node-fusion", "pairs")):
            chosen = [p.subject for p in by_role.get(role, ())
                      if values[p.name] is True or role != "stencil-fusion" and values[p.name]]
            if role.endswith("-fusion") and role != "loop-fusion":
                chosen = [pair for pair in chosen if self._same_place(pair, placed, notes)
                          and not self._folded(pair, folded, notes)]
            if role == "stencil-fusion":
                folded = {pair.split(":")[0] for pair in chosen}
            if chosen:
                steps.append((role, {option: tuple(chosen)}))
        return steps

    def _tile_steps(self, values, by_role, placed, module: Module, notes) -> list:
        """The steps of the stencil pairs computed in local tiles, which run
        after node-fusion (the stencil's node may have taken its consumers
        in; a fused node keeps its producer's origin), on the pairs as
        named now."""
        origins = _origins(module)
        steps = []
        for p in by_role.get("stencil-fusion", ()):
            value = values[p.name]
            if not isinstance(value, str) or not self._same_place(p.subject, placed, notes):
                continue
            producer, consumer = p.subject.split(":")
            if producer not in origins or consumer not in origins:
                notes.append(f"{p.name} = {value}: not applied: a fusion merged its nodes "
                             "into others")
                continue
            step = stencil_fusion_steps({f"{origins[producer]}:{origins[consumer]}": value})
            try:
                module = run_pipeline(module, step)
            except PassError as error:
                notes.append(f"{p.name} = {value}: not applied: {error.diagnostics[0].message}")
                continue
            steps += step
        return steps

    @staticmethod
    def _folded(pair: str, folded: set[str], notes: list[str]) -> bool:
        """Whether a node of a node-fusion ``pair`` was folded into its
        consumer by stencil-fusion (it is gone then)."""
        gone = [node for node in pair.split(":") if node in folded]
        if gone:
            notes.append(f"fuse {pair}: not fused, stencil-fusion recomputes '{gone[0]}' in "
                         "its consumer")
        return bool(gone)

    def _node_steps(self, values, by_role, module: Module, notes) -> list:
        """The steps of the per-node forms (parallel-reduce, tile), on the
        nodes the graph steps left: a node fused into its producer is
        gone, and one a fusion changed may no longer take its form (a
        stencil's reads recomputed); such forms are not applied (a note
        says so)."""
        origins = _origins(module)

        def surviving(role: str, nodes: tuple[str, ...], eligible: list[str]) -> tuple[str, ...]:
            """``nodes`` (``node`` or ``graph.node``) as named now, where the
            form still applies; ``eligible``: ``graph.node`` of those it does."""
            takes_form = set(eligible) | {ref.split(".", 1)[1] for ref in eligible}
            now = []
            for ref in nodes:
                if ref not in origins:
                    notes.append(f"{role} of node '{ref}' not applied: a fusion merged the "
                                 "node into another")
                elif origins[ref] not in takes_form:
                    notes.append(f"{role} of node '{ref}' not applied: the fusions chosen "
                                 "with it changed the node, and the form no longer applies")
                else:
                    now.append(origins[ref])
            return tuple(now)

        steps = []
        for form_lanes, nodes in _nodes_by_value(values, by_role.get("parallel-reduce", ())):
            form, lanes = form_lanes.split()
            nodes = surviving("parallel-reduce", nodes, reduce_eligible(
                module, "tree" if form == "tree" else "chunks"))
            steps += reduce_steps(form, int(lanes), nodes) if nodes else []
        for form_size, nodes in _nodes_by_value(values, by_role.get("tile", ())):
            form, size = form_size.split()
            if form == "group":
                nodes = surviving("tile", nodes, register_tile.eligible_nodes(module))
                if nodes:
                    steps.append(("register-tile", {**group_of_label(size), "nodes": nodes}))
            else:
                nodes = surviving("tile", nodes, tile.eligible_nodes(module, form, int(size)))
                if nodes:
                    steps.append(("tile", {"form": form, "size": int(size), "nodes": nodes}))
        return steps

    def _same_place(self, pair: str, placed: dict, notes: list[str]) -> bool:
        graph_of = {node.name: graph.name for graph in self.module.graphs.values()
                    for node in graph.nodes}
        producer, consumer = pair.split(":")
        where = [placed.get(str(NodeRef(graph_of[n], n))) for n in (producer, consumer)]
        if where[0] != where[1]:
            notes.append(f"fuse {pair}: not fused, its nodes run on {where[0]} and {where[1]}")
            return False
        return True

    def _options(self, values, by_role, origins: dict[str, str]) -> dict:
        options: dict[str, Any] = {}
        for p in by_role.get("task-parallelism", ()):
            options["task_parallelism"] = values[p.name]
        if any(values.get(p.name, p.default) for p in by_role.get("default-pipeline", ())):
            options["pipeline"] = "default"
        for p in by_role.get("knob", ()):
            target, option, node = p.subject
            value = values[p.name]
            if value is None:
                continue
            section = options.setdefault(target, {})
            if node is None:
                section[option] = value
                continue
            per_node = section.setdefault(option, {})
            for now, origin in origins.items():
                if origin == node:
                    per_node[now] = value
        return options


def space(program, targets, passes=PASS_PARAMETERS, registry=None,
          copies_seen: bool = True) -> Space:
    """The design space of ``program`` (what ``hpvm.compile`` takes: a
    front-end program, a Module or a ``.hpvm`` path) on the ordered
    ``targets`` (see the module docstring); ``passes`` picks the passes
    whose parameters it includes (``()``: target knobs and placement only).
    ``copies_seen``: whether what is tuned for sees host copies; if not,
    knobs that change only copies (``Knob.copies_only``) are left out."""
    module = as_module(program)
    registry = registry or get_registry()
    targets = [targets] if isinstance(targets, str) else list(targets)
    unknown = [name for name in passes if name not in PASS_PARAMETERS]
    if unknown:
        raise TuneError(f"no tuning parameters for pass(es) {', '.join(unknown)} (fix: choose "
                        f"among {', '.join(PASS_PARAMETERS)})")
    usable = registry.usable(targets)  # an unknown name raises TargetError
    if not usable:
        raise TuneError(f"none of the targets {', '.join(targets)} is usable here "
                        "(`hpvm targets` says why)")
    claimed = _claims(module, usable)
    parameters = _placement_parameters(module, claimed)
    for name in PASS_PARAMETERS:
        if name in passes:
            parameters += parameters_of_pass(name, module, usable)
    parameters += _knob_parameters(module, usable, claimed, copies_seen)
    leaves = sum(1 for graph in module.graphs.values() for node in graph.nodes if node.is_leaf)
    if leaves > 1:
        parameters.append(Parameter("task parallelism", (True, False), True,
                                    "run nodes with no path between them at the same time",
                                    "task-parallelism"))
    pipeline = usable[0].default_pipeline if usable[0].name == targets[0] else ""
    if pipeline and passes:  # a pass pipeline: offered where passes are tuned
        parameters.append(Parameter(DEFAULT_PIPELINE, (False, True), False,
                                    f"run {targets[0]}'s default pipeline ({pipeline}) after "
                                    "the tuned passes", "default-pipeline"))
    placed = {ref: (claimants[0].name if claimants else None) for ref, claimants in claimed.items()}
    for graph in module.graphs.values():
        for node in graph.nodes:
            ref = str(NodeRef(graph.name, node.name))
            hinted = [t.name for t in claimed.get(ref, ()) if node.hint and t.name.startswith(node.hint)]
            if hinted:
                placed[ref] = hinted[0]
    return Space(module, targets, parameters, placed)


def _origins(module: Module) -> dict[str, str]:
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


def module_digest(module: Module) -> str:
    """The sha256 of the module's canonical text: a configuration is made
    for one program."""
    return hashlib.sha256(print_module(module).encode()).hexdigest()


# -- where parameters come from ----------------------------------------------
def _claims(module: Module, targets) -> dict[str, list]:
    """The targets (in list order) that claim each leaf node, by node ref."""
    claimed = {}
    for graph in module.graphs.values():
        for node in graph.nodes:
            if node.is_leaf:
                claimed[str(NodeRef(graph.name, node.name))] = [
                    t for t in targets if takes(t, module, graph, node)]
    return claimed


def _placement_parameters(module: Module, claimed) -> list[Parameter]:
    parameters = []
    for graph in module.graphs.values():
        for node in graph.nodes:
            ref = str(NodeRef(graph.name, node.name))
            names = tuple(t.name for t in claimed.get(ref, ()))
            if node.is_leaf and node.hint is None and len(names) > 1:
                parameters.append(Parameter(f"place {ref}", names, names[0],
                                            f"the target that runs node '{node.name}'",
                                            "placement", ref))
    return parameters


def _knob_parameters(module: Module, targets, claimed, copies_seen: bool) -> list[Parameter]:
    parameters = []
    for target in targets:
        nodes = [_ref(key) for key, claimants in claimed.items() if target in claimants]
        if not nodes:
            continue
        for knob in target.knobs(module, nodes):
            if len(knob.values) < 2 or (knob.copies_only and not copies_seen):
                continue
            where = f" {knob.node}" if knob.node is not None else ""
            about = f"{target.name} option '{knob.name}'" + \
                (f" of node '{knob.node.node}'" if knob.node is not None else " (whole program)")
            parameters.append(Parameter(f"{target.name}.{knob.name}{where}", tuple(knob.values),
                                        knob.default, about, "knob",
                                        (target.name, knob.name,
                                         knob.node.node if knob.node is not None else None),
                                        knob.as_written))
    return parameters


def _ref(key: str) -> NodeRef:
    graph, node = key[1:].split(".", 1)
    return NodeRef(graph, node)


def _listing(names) -> str:
    names = list(names)
    shown = ", ".join(f"'{n}'" for n in names[:12])
    return (shown + (f" and {len(names) - 12} more" if len(names) > 12 else "")) or "none"
