"""From a program to what an Executable is made of: the module placed on
its targets, partitions outlined, and each target's artifact (``build``).
``compile`` (executable.py) wraps a build in an Executable."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Sequence

from ..errors import HpvmError
from ..ir.graph import Module, TensorBody
from ..ir.text import load_module
from ..ir.verify import verify
from ..options import resolve_compile_options
from ..passes import run_pipeline
from ..passes.outline import OutlineError, outline
from ..registry import Registry, get_registry
from ..target import Artifact, NodeRef, Target
from .collector import collector_paused
from .placement import FALLBACKS, Placement, plan

DEFAULT_TARGETS = ("cpu",)
TARGET_FUSIONS = (("attention", "fuse-attention", "fuse_attention"),)
"""Ops made by fusing several, with the pass that makes them and the
target option that can turn it off: run before placement where every
listed target runs the op itself (the cpu lowers it to one kernel) and
none turns it off; for any other list the ops stay apart, as targets that
would lower it generically (a GPU's private memory) or not at all run
them better apart."""


def as_module(program) -> Module:
    """A Module from a Module, a ``.hpvm`` path, or a front-end program or
    graph builder (anything with a ``build()`` method returning a Module)."""
    if isinstance(program, Module):
        return program
    if isinstance(program, (str, Path)):
        return load_module(program)
    if callable(getattr(program, "build", None)):
        module = program.build()
        if isinstance(module, Module):
            return module
    raise HpvmError(f"cannot compile {type(program).__name__}: pass a Module, a .hpvm "
                    "file, or a function decorated with @hpvm.program")


class Build(NamedTuple):
    """A compiled program, the arguments of an Executable: the module as
    compiled (partitions outlined), its placement, each used target's
    artifact, the compile options and the registry of the targets."""

    module: Module
    placement: Placement
    artifacts: dict[str, Artifact]
    options: dict
    registry: Registry


def build(program, targets: Sequence[str] | None = None, options: dict | None = None,
          registry: Registry | None = None, notes: Sequence[str] = ()) -> Build:
    """Compile ``program`` for the ordered ``targets`` (see placement); a
    single target may be given as its name.  ``notes`` are added to the
    placement report (what a caller did to the program before, such as
    applying a tuned configuration: hpvm.api.compile)."""
    with collector_paused():
        return _build(program, targets, options, registry, notes)


def _build(program, targets, options, registry, notes) -> Build:
    registry = registry or get_registry()
    options = dict(options or {})
    targets = [targets] if isinstance(targets, str) else targets
    module = as_module(program)
    verify(module)
    targets = list(targets if targets is not None else DEFAULT_TARGETS)
    per_target = resolve_compile_options(options, with_fallbacks(targets), registry)
    pipeline = _pipeline(options.get("pipeline", ""), targets, registry, per_target)
    if pipeline:
        module = run_pipeline(module, pipeline)
    module, fused = _fuse_for(module, targets, registry, per_target)
    placement = plan(module, targets, registry, per_target)
    placement.notes.extend(notes)
    placement.notes.extend(fused)
    module = outline_partitions(module, placement, per_target, registry)
    artifacts = {}
    for name in placement.used_targets:
        target = registry.target(name).target
        nodes = placement.nodes_of(name)
        target_options = per_target[name]
        prepared = prepare_for_target(module, target, nodes, target_options)
        artifacts[name] = target.compile(prepared, nodes, target_options)
        placement.notes.extend(f"{name}: {note}" for note in artifacts[name].notes)
    return Build(module, placement, artifacts, options, registry)


def _fuse_for(module: Module, targets: list[str], registry,
              per_target: dict) -> tuple[Module, list[str]]:
    """``module`` with the TARGET_FUSIONS every listed target takes and
    none turns off, and a note for each that fused nodes."""
    notes = []
    for op, fusion, option in TARGET_FUSIONS:
        if not all(op in _native_ops(name, registry)
                   and per_target.get(name, {}).get(option) is not False for name in targets):
            continue
        before = _count_op(module, op)
        module = run_pipeline(module, fusion)
        made = _count_op(module, op) - before
        if made:
            notes.append(f"{fusion}: {made} {op} node{'s' if made != 1 else ''}")
    return module, notes


def _native_ops(name: str, registry) -> frozenset[str]:
    try:
        return registry.target(name).target.native_tensor_ops
    except HpvmError:  # not installed: placement says so
        return frozenset()


def _count_op(module: Module, op: str) -> int:
    return sum(isinstance(n.body, TensorBody) and n.body.op == op
               for graph in module.graphs.values() for n in graph.nodes)


def outline_partitions(module: Module, placement, per_target: dict, registry) -> Module:
    """``module`` with the groups each target asks for (Target.partitions)
    outlined into internal nodes, recorded in ``placement.partitions``."""
    for name in placement.used_targets:
        target = registry.target(name).target
        for group in target.partitions(module, placement.nodes_of(name), per_target[name]):
            if len(group) < 2:
                continue  # a node alone is launched as it is
            members = [str(ref) for ref in group]
            graphs = {ref.graph for ref in group}
            try:
                if len(graphs) != 1 or any(placement.targets.get(m) != name for m in members):
                    raise OutlineError("a partition must hold nodes of one graph, all placed "
                                       f"on '{name}'")
                module, node = outline(module, graphs.pop(), [ref.node for ref in group],
                                       f"{name}_part")
            except OutlineError as error:
                raise HpvmError(f"target '{name}' asked to run {members} as one launch, which "
                                f"cannot be done: {error}; this is a bug of the target "
                                "plugin, report it to its vendor") from None
            placement.partitions[str(NodeRef(group[0].graph, node))] = members
    return module


def _pipeline(requested: str, targets: list[str], registry, per_target: dict) -> str:
    """The passes the ``pipeline`` option asks for: ``"default"`` is the
    first listed target's default pipeline for its options
    (``Target.pipeline_for``)."""
    if requested != "default":
        return requested
    return registry.target(targets[0]).target.pipeline_for(per_target[targets[0]]) \
        if targets else ""


def with_fallbacks(targets: list[str]) -> list[str]:
    """The listed targets and those placement falls back to."""
    return targets + [name for name in FALLBACKS if name not in targets]


def prepare_for_target(module: Module, target: Target, nodes: list[NodeRef],
                       options: dict) -> Module:
    """The module as ``target`` compiles it: tensor ops it does not take
    natively lowered to kernels, then the target's own passes."""
    tensor_ops = {n.body.op for ref in nodes
                  for n in [module.graph(ref.graph).node(ref.node)] if isinstance(n.body, TensorBody)}
    if tensor_ops - set(target.native_tensor_ops):
        keep = ",".join(sorted(target.native_tensor_ops))
        module = run_pipeline(module, f"legalize-tensor-ops{{keep={keep}}}" if keep
                              else "legalize-tensor-ops")
    pipeline = target.passes(options)
    return run_pipeline(module, pipeline) if pipeline else module
