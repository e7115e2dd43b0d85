"""``hpvm.compile``: from a program to an Executable."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import HpvmError
from ..ir.graph import Module, TensorBody
from ..target import NodeRef, Target
from .executable import Executable
from .placement import FALLBACKS, plan

DEFAULT_TARGETS = ("cpu",)


def as_module(program) -> Module:
    """A Module from a Module, a ``.hpvm`` path, or a front-end program or
    graph builder (anything with a ``build()`` method returning a Module)."""
    if isinstance(program, Module):
        return program
    if isinstance(program, (str, Path)):
        from ..ir.text import load_module
        return load_module(program)
    if callable(getattr(program, "build", None)):
        module = program.build()
        if isinstance(module, Module):
            return module
    raise HpvmError(f"cannot compile {type(program).__name__}: pass a Module, a .hpvm "
                    "file, or a function decorated with @hpvm.program")


def compile(program, targets: Sequence[str] | None = None, options: dict | None = None,
            registry=None, config=None) -> Executable:
    """Compile ``program`` for the ordered ``targets`` (see placement); a
    single target may be given as its name.  ``config`` (a TuningConfig,
    its JSON dict or file, from hpvm.tune) applies a tuned configuration:
    its passes, placement and options (``options`` given here override
    its options); ``targets`` then default to those it was tuned for."""
    from ..ir.verify import verify
    from ..options import resolve_compile_options
    from ..registry import get_registry
    registry = registry or get_registry()
    options = dict(options or {})
    targets = [targets] if isinstance(targets, str) else targets
    module = as_module(program)
    verify(module)
    tuned = None
    if config is not None:
        from ..tune.config import merge_options, realise_config
        tuned, targets, realised = realise_config(module, config, targets, registry)
        module = realised.module
        options = merge_options(realised.options, options)
    targets = list(targets if targets is not None else DEFAULT_TARGETS)
    per_target = resolve_compile_options(options, with_fallbacks(targets), registry)
    pipeline = _pipeline(options.get("pipeline", ""), targets, registry)
    if pipeline:
        from ..passes import run_pipeline
        module = run_pipeline(module, pipeline)
    placement = plan(module, targets, registry, per_target)
    if tuned is not None:
        placement.notes.append(f"tuned configuration applied ({len(tuned.values)} parameters"
                               + (f"; pipeline {realised.pipeline}" if realised.pipeline else "")
                               + ")")
        placement.notes.extend(f"tuning: {note}" for note in realised.notes)
    module = outline_partitions(module, placement, per_target, registry)
    artifacts = {}
    for name in placement.used_targets:
        target = registry.target(name).target
        nodes = placement.nodes_of(name)
        target_options = per_target[name]
        prepared = prepare_for_target(module, target, nodes, target_options)
        artifacts[name] = target.compile(prepared, nodes, target_options)
        placement.notes.extend(f"{name}: {note}" for note in artifacts[name].notes)
    exe = Executable(module, placement, artifacts, options, registry)
    exe.config = tuned.to_json() if tuned is not None else None
    return exe


def outline_partitions(module: Module, placement, per_target: dict, registry) -> Module:
    """``module`` with the groups each target asks for (Target.partitions)
    outlined into internal nodes, recorded in ``placement.partitions``."""
    from ..passes.outline import OutlineError, outline
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


def _pipeline(requested: str, targets: list[str], registry) -> str:
    """The passes the ``pipeline`` option asks for: ``"default"`` is the
    first listed target's ``default_pipeline``."""
    if requested != "default":
        return requested
    return registry.target(targets[0]).target.default_pipeline if targets else ""


def with_fallbacks(targets: list[str]) -> list[str]:
    """The listed targets and those placement falls back to."""
    return targets + [name for name in FALLBACKS if name not in targets]


def prepare_for_target(module: Module, target: Target, nodes: list[NodeRef],
                       options: dict) -> Module:
    """The module as ``target`` compiles it: tensor ops it does not take
    natively lowered to kernels, then the target's own passes."""
    from ..passes import run_pipeline
    tensor_ops = {n.body.op for ref in nodes
                  for n in [module.graph(ref.graph).node(ref.node)] if isinstance(n.body, TensorBody)}
    if tensor_ops - set(target.native_tensor_ops):
        keep = ",".join(sorted(target.native_tensor_ops))
        module = run_pipeline(module, f"legalize-tensor-ops{{keep={keep}}}" if keep
                              else "legalize-tensor-ops")
    pipeline = target.passes(options)
    return run_pipeline(module, pipeline) if pipeline else module
