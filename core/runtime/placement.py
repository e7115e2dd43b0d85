"""Placement: which target runs each leaf node.

For every leaf node, in order: a target from the user's list whose name
matches the node's hint and that claims the node; else the first listed
target that claims it; else the fallback ``cpu``; else the reference
interpreter ``interp``.  Unavailable targets are skipped, with a note.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from html import escape

from ..errors import TargetError
from ..ir.graph import Module, TensorBody
from ..ir.tensor_ops.precision import LOWERED_PRECISIONS, node_precision
from ..target import NodeRef, Target

FALLBACKS = ("cpu", "interp")


@dataclass
class Placement:
    """Target per leaf node (keyed by ``str(NodeRef)``) and why."""

    targets: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    partitions: dict[str, list[str]] = field(default_factory=dict)
    """Internal nodes a target runs as one launch (Target.partitions), each
    with the keys of the nodes of the program as written that it holds."""

    def target_of(self, ref: NodeRef) -> str:
        return self.task_targets[str(ref)]

    def nodes_of(self, target: str) -> list[NodeRef]:
        """What ``target`` compiles and launches: its partitions and its
        nodes outside them."""
        return [_parse_ref(key) for key, t in self.task_targets.items() if t == target]

    @property
    def task_targets(self) -> dict[str, str]:
        """Target per task of the running program: the nodes outside
        partitions, and each partition."""
        grouped = {member for members in self.partitions.values() for member in members}
        tasks = {key: t for key, t in self.targets.items() if key not in grouped}
        tasks.update((key, self.targets[members[0]]) for key, members in self.partitions.items())
        return tasks

    def node_targets(self) -> dict[str, str]:
        """Target per node name, as drawings label nodes (hpvm.ir.draw)."""
        return {key.split(".", 1)[1]: target for key, target in self.targets.items()}

    def html(self) -> str:
        """The table of :meth:`format` as HTML (notebooks)."""
        rows = "".join(f"<tr><td>{escape(key)}</td><td>{escape(target)}</td>"
                       f"<td>{escape(self.reasons[key])}</td></tr>"
                       for key, target in self.targets.items())
        notes = "".join(f"<li>{escape(note)}</li>" for note in self.notes)
        return ("<table><tr><th>node</th><th>target</th><th>reason</th></tr>" + rows
                + "</table>" + (f"<ul>{notes}</ul>" if notes else ""))

    @property
    def used_targets(self) -> list[str]:
        return list(dict.fromkeys(self.targets.values()))

    def to_json(self) -> dict:
        return {"targets": self.targets, "reasons": self.reasons, "notes": self.notes,
                "partitions": self.partitions}

    @classmethod
    def from_json(cls, data: dict) -> "Placement":
        partitions = {key: list(members) for key, members in data.get("partitions", {}).items()}
        return cls(dict(data["targets"]), dict(data["reasons"]), list(data["notes"]), partitions)

    def __repr__(self) -> str:
        counts = Counter(self.targets.values())
        placed = ", ".join(f"{target} {count}" for target, count in counts.items())
        nodes = len(self.targets)
        return f"<Placement: {nodes} node{'' if nodes == 1 else 's'} ({placed or 'none'})>"

    def __str__(self) -> str:
        return self.format()

    def format(self) -> str:
        """A table: node, target, reason; then the partitions and notes."""
        width = max([len(k) for k in self.targets] + [4])
        lines = [f"{'node':<{width}}  {'target':<12}  reason"]
        for key, target in self.targets.items():
            lines.append(f"{key:<{width}}  {target:<12}  {self.reasons[key]}")
        for key, members in self.partitions.items():
            names = ", ".join(m.split(".", 1)[1] for m in members)
            lines.append(f"partition {key} on {self.targets[members[0]]}, one launch: {names}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _parse_ref(key: str) -> NodeRef:
    graph, node = key[1:].split(".", 1)
    return NodeRef(graph, node)


def hint_matches(hint: str, target_name: str) -> bool:
    """A hint names a target (``gpu_opencl``) or its family (``gpu``)."""
    return target_name == hint or target_name.startswith(hint + "_")


def plan(module: Module, target_names: list[str], registry,
         options: dict[str, dict] | None = None) -> Placement:
    """Place every leaf node of ``module`` (see the module docstring);
    ``options``: each target's compile options (Target.configured)."""
    placement = Placement()
    chosen: list[Target] = []
    options = options or {}
    for name in target_names:
        info = registry.target(name)  # unknown names raise TargetError
        if info.availability.available:
            chosen.append(info.target.configured(options.get(name, {})))
        else:
            placement.notes.append(f"target '{name}' skipped: {info.availability.reason}")
    fallbacks = [info.target.configured(options.get(info.name, {}))
                 for info in _installed(registry, FALLBACKS) if info.availability.available]
    for graph in module.graphs.values():
        for node in graph.nodes:
            if not node.is_leaf:
                continue
            key = str(NodeRef(graph.name, node.name))
            target, reason = _choose(module, graph, node, chosen, fallbacks)
            placement.targets[key] = target.name
            placement.reasons[key] = reason
    return placement


def _installed(registry, names):
    for name in names:
        try:
            yield registry.target(name)
        except TargetError:
            continue


def takes(target: Target, module: Module, graph, node) -> bool:
    """Whether ``target`` claims ``node`` and honours its precision."""
    return target.claims(module, graph, node) and not precision_refusal(target, node)


def precision_refusal(target: Target, node) -> str:
    """Why ``target`` cannot honour ``node``'s precision ('' if it can):
    it would run the node's op natively, and not in that precision, or
    lower it to kernels, which lack that precision (tf32)."""
    if not isinstance(node.body, TensorBody):
        return ""
    precision = node_precision(node)
    if node.body.op in target.native_tensor_ops:
        if precision in target.native_precisions:
            return ""
        return (f"its {node.body.op} does not compute in precision {precision} "
                f"(it does {', '.join(sorted(target.native_precisions))})")
    if precision in LOWERED_PRECISIONS:
        return ""
    return f"it lowers {node.body.op} to kernels, which do not compute in precision {precision}"


def _choose(module, graph, node, chosen, fallbacks) -> tuple[Target, str]:
    if node.hint:
        for target in chosen:
            if hint_matches(node.hint, target.name) and takes(target, module, graph, node):
                return target, f"hint '{node.hint}'"
    for target in chosen:
        if takes(target, module, graph, node):
            return target, "first listed target that claims it"
    declined = "; ".join(f"{t.name}: {why}" for t in chosen
                         for why in [precision_refusal(t, node)
                                     or t.declines(module, graph, node)] if why)
    for target in fallbacks:
        if takes(target, module, graph, node):
            return target, ("fallback: no listed target claims it"
                            + (f" ({declined})" if declined else ""))
    raise TargetError(f"node '{node.name}' of graph '@{graph.name}': no target can run it; "
                      f"install a target that claims it (see `hpvm targets`)")
