"""What the code generator and the model see: the placed kernel nodes
sequentialized into single work items (their replication becomes ``ivdep``
loops), each node's innermost instance loop unrolled, and fixed-size
inputs buffered on chip, as the options ``unroll_instances`` and
``input_buffering`` say (the DSE's knobs).

Nodes whose kernels are copies of one function (a program that repeats a
loop nest, such as the sweeps of a stencil) form one *copy group*: only the
first has knobs, and its settings apply to all of them, so the DSE tunes
what differs, not every repetition.
"""
from __future__ import annotations

from hpvm.errors import TargetError
from hpvm.ir.graph import KernelBody, Module
from hpvm.ir.kernel import For
from hpvm.target import NodeRef

MAX_BUFFERED_ELEMENTS = 16384


def prepared(module: Module, nodes: list[NodeRef], options: dict) -> Module:
    """``module`` as the code generator and the model see it."""
    from hpvm.passes.input_buffering import input_buffering
    groups = copy_groups(module, nodes)
    module = sequentialized(module, nodes, _per_node(options.get("unroll_instances"), groups))
    wanted = _per_node(options.get("input_buffering"), groups)
    functions = {function_of(module, ref) for ref in nodes if wanted.get(ref)}
    chosen = tuple(p for p in bufferable(module) if p.partition(".")[0] in functions)
    return input_buffering(module, chosen, MAX_BUFFERED_ELEMENTS) if chosen else module


def copy_groups(module: Module, nodes: list[NodeRef]) -> dict[NodeRef, NodeRef]:
    """Each kernel node -> the first node whose kernel is a copy of its own
    (same parameters, body and replication)."""
    first: dict[tuple, NodeRef] = {}
    groups = {}
    for ref in nodes:
        node = module.graph(ref.graph).node(ref.node)
        if not isinstance(node.body, KernelBody):
            continue
        function = module.function(node.body.function)
        key = (function.params, function.body, node.replication)
        groups[ref] = first.setdefault(key, ref)
    return groups


def _per_node(option, groups: dict[NodeRef, NodeRef]) -> dict[NodeRef, object]:
    """An option given for every node (a value) or per node (a dict node
    name -> value, a copy group's first node speaking for the group)."""
    if not isinstance(option, dict):
        return {ref: option for ref in groups}
    return {ref: option.get(ref.node, option.get(lead.node)) for ref, lead in groups.items()}


def bufferable(module: Module) -> list[str]:
    from hpvm.passes.input_buffering import eligible_params
    return eligible_params(module, MAX_BUFFERED_ELEMENTS)


def function_of(module: Module, ref: NodeRef) -> str | None:
    body = module.graph(ref.graph).node(ref.node).body
    return body.function if isinstance(body, KernelBody) else None


def replicated_kernel(module: Module, ref: NodeRef) -> bool:
    node = module.graph(ref.graph).node(ref.node)
    return isinstance(node.body, KernelBody) and bool(node.replication)


def sequentialized(module: Module, nodes: list[NodeRef],
                   unroll: dict[NodeRef, object] | None = None) -> Module:
    """``module`` with the replicated kernel nodes among ``nodes`` turned
    into loops (single work items), the innermost instance loop of each
    node in ``unroll`` given that factor as a hint."""
    from hpvm.passes.loop_unroll import loops_by_id, with_unroll_hints
    from hpvm.passes.sequentialize import sequentialize
    replicated = [ref for ref in nodes if replicated_kernel(module, ref)]
    if not replicated:
        return module
    ranks = {ref: len(module.graph(ref.graph).node(ref.node).replication) for ref in replicated}
    module = sequentialize(module, tuple(f"{ref.graph}.{ref.node}" for ref in replicated))
    hints = {}
    for ref in replicated:
        factor = (unroll or {}).get(ref)
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int)):
            raise TargetError(f"fpga_aoc: option unroll_instances gives node '{ref.node}' "
                              f"{factor!r} (fix: a positive int, or a dict node -> int)")
        if not factor or factor <= 1:
            continue
        function = module.function(module.graph(ref.graph).node(ref.node).body.function)
        innermost = _instance_loop(function.body, ranks[ref])
        loop_id = next(i for i, loop in loops_by_id(function).items() if loop is innermost)
        hints.setdefault(loop_id, factor)
    return with_unroll_hints(module, hints) if hints else module


def _instance_loop(body, rank: int):
    """The innermost of the ``rank`` nested instance loops sequentialize
    put at the top of a kernel."""
    loop = next(s for s in body if isinstance(s, For))
    for _ in range(rank - 1):
        loop = next(s for s in loop.body if isinstance(s, For))
    return loop
