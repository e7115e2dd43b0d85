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
- **passes** (``passes=``, by default all nine): a boolean per fusible
  producer/consumer pair (node-fusion), per producer a stencil may
  recompute or compute per work group in local tiles (stencil-fusion: no,
  yes, or a tile form where a listed target takes the fused node), per
  function with fusible loops (loop-fusion), per loop nest that may be
  swapped (loop-interchange), a block size per nest that may run in
  blocks (loop-tile) and per eligible ``private``
  parameter (argument-privatisation); a form per node with reduction loops
  (parallel-reduce: as written, a work-group tree or chunks, with a lane
  count; with ``reassociate``, also per node whose loops sum floats in a
  chain, folded in another order: Halide's and TVM's rfactor, which the
  user allows, as C compilers' -fassociative-math); a tile form per
  two-dimensional node a listed target still claims once tiled (tile:
  matmul or stencil, group side); an unroll factor per kernel loop
  (loop-unroll; 0 keeps the loop as written, a constant trip count
  unrolls fully; functions that are copies of one another share their
  loops' factors; and whether loop-unroll copies the bodies or the back
  end unrolls from the hints).  Found by pass_parameters.py; realised (steps.py) as
  one pass pipeline, in the order loop-tile, loop-interchange (neither in
  a function whose loops are fused), argument-privatisation, loop-fusion,
  stencil-fusion (recomputing), node-fusion, stencil-fusion (in tiles, on
  the stencil's node as node-fusion left it), parallel-reduce, tile,
  loop-unroll, dce; unroll factors travel as the loops' ``unroll`` hints,
  so they survive the passes before them, and the per-node forms follow
  a node into a fusion (node-fusion's node keeps the producer's,
  stencil-fusion's the consumer's); a node-fusion pair whose
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
from ..passes import format_pipeline, run_pipeline
from ..passes.loop_unroll import with_unroll_hints
from ..passes.module_tools import map_nodes
from ..registry import get_registry
from ..runtime.compiler import as_module
from ..runtime.placement import takes
from ..target import NodeRef
from .parameter import Parameter, TuneError
from .pass_parameters import PASS_PARAMETERS, UNROLL_COPIES, parameters_of_pass
from .steps import ORIGIN, StepPlan, products_kept_whole

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
                 placed: dict[str, str | None] | None = None, reassociate: bool = False,
                 default_pipeline: str = "", target_passes: str = ""):
        self.module = module
        self.targets = list(targets)
        self.reassociate = reassociate
        """Whether float sums written as chains may be folded in another
        order (parallel-reduce values ending in REASSOCIATED)."""
        self.default_pipeline_text = default_pipeline
        """The first target's default pipeline, as the default-pipeline
        knob runs it ("" where it has none)."""
        self.target_passes = target_passes
        """The passes the first target runs on every compile after the
        tuned ones (``Target.passes``)."""
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
        return Space(self.module, self.targets, kept, self.placed, self.reassociate)

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
        plan = StepPlan(self.module, values, by_role, placed)
        steps = plan.graph_steps()
        if steps:
            module = run_pipeline(module, steps)
        module, tiled = plan.tile_steps(module)
        steps += tiled
        node_steps = plan.node_steps(module)
        steps += node_steps
        if node_steps:
            module = run_pipeline(module, node_steps)
        if hints and all(values[p.name] for p in by_role.get(UNROLL_COPIES, ())):
            if self._tiles_products(values, by_role):
                module = products_kept_whole(module, plan.notes)
            module = run_pipeline(module, [("loop-unroll", {})])
            steps.append(("loop-unroll", {}))
        if steps:
            module = run_pipeline(module, [("dce", {})])
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
                           plan.notes)

    def _tiles_products(self, values, by_role) -> bool:
        """Whether register-tile runs after the tuned passes: the target's
        own passes, or its default pipeline where the configuration runs
        it."""
        default = any(values.get(p.name) for p in by_role.get("default-pipeline", ()))
        return "register-tile" in self.target_passes or \
            default and "register-tile" in self.default_pipeline_text

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
          copies_seen: bool = True, reassociate: bool = False) -> Space:
    """The design space of ``program`` (what ``hpvm.compile`` takes: a
    front-end program, a Module or a ``.hpvm`` path) on the ordered
    ``targets`` (see the module docstring); ``passes`` picks the passes
    whose parameters it includes (``()``: target knobs and placement only).
    ``copies_seen``: whether what is tuned for sees host copies; if not,
    knobs that change only copies (``Knob.copies_only``) are left out.
    ``reassociate``: whether parallel-reduce may fold float sums that a
    kernel writes as a chain, in another order (their rounding changes;
    every sample's outputs are still checked against the reference)."""
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
            parameters += parameters_of_pass(name, module, usable, reassociate)
    parameters += _knob_parameters(module, usable, claimed, copies_seen)
    leaves = sum(1 for graph in module.graphs.values() for node in graph.nodes if node.is_leaf)
    if leaves > 1:
        parameters.append(Parameter("task parallelism", (True, False), True,
                                    "run nodes with no path between them at the same time",
                                    "task-parallelism"))
    # as a compile with the target's default options runs it (the cpu's for its cores)
    pipeline = usable[0].pipeline_for({}) if usable[0].name == targets[0] else ""
    if pipeline and passes:  # a pass pipeline: offered where passes are tuned
        parameters.append(Parameter(DEFAULT_PIPELINE, (False, True), False,
                                    f"run {targets[0]}'s default pipeline ({pipeline}) after "
                                    "the tuned passes", "default-pipeline"))
    placed = {ref: (claimants[0].name if claimants else None) for ref, claimants in claimed.items()}
    for graph in module.graphs.values():
        for node in graph.nodes:
            ref = str(NodeRef(graph.name, node.name))
            hinted = [t.name for t in claimed.get(ref, ())
                      if node.hint and t.name.startswith(node.hint)]
            if hinted:
                placed[ref] = hinted[0]
    later = usable[0].passes({}) if usable[0].name == targets[0] else ""
    return Space(module, targets, parameters, placed, reassociate, pipeline, later)


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
