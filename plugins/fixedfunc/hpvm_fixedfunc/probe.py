"""The probe: does a matched group of nodes compute what the accelerator
computes?  The reference interpreter runs the group alone on small inputs
the signature makes, and each of the signature's conventions is compared
with it; the first that agrees at both probe sizes is the one the
accelerator runs.

The group runs as a module of its own: a single node inside a graph whose
parameters are its ports; several nodes outlined (hpvm.passes.outline)
into the internal node the runtime will launch, so the ports the probe
fills are the ones the device will be handed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hpvm.errors import HpvmError
from hpvm.ir.graph import BindIn, BindOut, Graph, Module

from .signatures import Binding, Refusal, Signature
from .signatures.base import same_values

TOLERANCE = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-4}


@dataclass(frozen=True)
class Ports:
    """Where each role's buffer comes in and goes out of the launched
    node: role -> port name."""

    inputs: dict[str, str]
    outputs: dict[str, str]


def ports_of(graph: Graph, members: list[str], first: Binding, last: Binding) -> Ports:
    """The ports of the node that runs ``members``: a single node is
    launched as it is (its ports are its kernel's parameters); several are
    outlined into an internal node, whose child ``graph`` says which of its
    parameters feeds the first member and which the last one produces."""
    if len(members) == 1:
        return Ports(dict(first.reads), dict(last.writes))
    inputs = {}
    for role, param in first.reads.items():
        feeding = [b.param for b in graph.bind_ins if b.dst_node == members[0] and b.dst_port == param]
        if not feeding:
            raise Refusal(f"'{param}' of node '{members[0]}' does not come from outside the group")
        inputs[role] = feeding[0]
    outputs = {role: b.param for role, param in last.writes.items() for b in graph.bind_outs
               if b.src_node == members[-1] and b.src_port == param}
    return Ports(inputs, outputs)


def standalone(module: Module, graph: Graph, members: list[str]) -> tuple[Module, Graph]:
    """A module whose root graph runs only ``members`` of ``graph``."""
    if len(members) == 1:
        node = graph.node(members[0])
        params = module.node_params(node)
        root = Graph("probe", tuple(params), (node,),
                     bind_ins=tuple(BindIn(p.name, node.name, p.name) for p in params if p.reads),
                     bind_outs=tuple(BindOut(node.name, p.name, p.name) for p in params if p.writes))
        return replace(module, graphs={"probe": root}, root="probe"), root
    from hpvm.passes.outline import outline
    outlined, name = outline(module, graph.name, members, "probe")
    child = outlined.graph(graph.name).node(name).body.graph
    return replace(outlined, root=child), outlined.graph(child)


def choose_convention(signature: Signature, module: Module, graph: Graph, members: list[str],
                      first: Binding, last: Binding, types: dict, limits: dict) -> dict:
    """The first convention under which the accelerator agrees with the
    interpreter on both probes; Refusal saying where they differ."""
    from hpvm.interp.api import run_module
    from .backends import NumpyBackend
    probe_module, root = standalone(module, graph, members)
    ports = ports_of(root, members, first, last)
    written = {p.name for p in root.params if p.writes}
    unbound = written - set(ports.outputs.values())
    if unbound:
        raise Refusal(f"the kernel also writes {sorted(unbound)}, which the accelerator does not produce")
    backend = NumpyBackend()
    remaining = signature.conventions(first, types)
    dtypes = {p.name: p.type.element.numpy_dtype for p in root.params if p.is_buffer}
    for scale in (0, 1):
        inputs = signature.probe_inputs(first, types, np.random.default_rng(scale), scale, limits)
        feed = {ports.inputs[role]: np.asarray(value).astype(dtypes[ports.inputs[role]])
                for role, value in inputs.items()}
        inputs = {role: feed[ports.inputs[role]] for role in inputs}
        symbols = signature.probe_symbols(first, types, inputs)
        feed.update((p.name, symbols[p.name]) for p in root.params
                    if not p.is_buffer and p.name not in feed and p.name in symbols)
        missing = [p.name for p in root.params if p.reads and p.name not in feed]
        if missing:
            raise Refusal(f"the probe has no value for {missing} (no role of the binding)")
        try:
            results = run_module(probe_module, feed)
        except HpvmError as error:
            raise Refusal(f"the kernel failed on a probe: {str(error).splitlines()[0]}") from None
        size = _describe(inputs)
        remaining = [c for c in remaining if _agrees(signature, {**c, **limits}, inputs, results, ports, backend)]
        if not remaining:
            raise Refusal(f"on a probe ({size}) the kernel's results differ from the {signature.name} "
                          f"accelerator's in every convention it supports")
    return {**remaining[0], **limits}


def _agrees(signature: Signature, convention: dict, inputs: dict, results: dict, ports: Ports,
            backend) -> bool:
    try:
        expected = signature.run(signature.prepare(convention, inputs), inputs, backend)
    except (Refusal, ValueError, IndexError):
        return False
    if not set(ports.outputs) <= set(expected):
        return False
    for role, port in ports.outputs.items():
        actual = results[port]
        tolerance = TOLERANCE.get(np.asarray(actual).dtype, 0)
        if not same_values(expected[role], actual, tolerance):
            return False
    return True


def _describe(inputs: dict) -> str:
    return ", ".join(f"{role} {'x'.join(map(str, np.shape(v)))}" for role, v in inputs.items())

