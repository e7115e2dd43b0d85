"""Object code for any triple LLVM knows (cross-compilation), apart from
the JIT: the same node entries (abi.py), optimised for the named machine
and emitted as a relocatable ELF (or the triple's object format)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpvm.errors import TargetError
from hpvm.ir.graph import KernelBody, Module
from hpvm.ir.kernel import InstanceCount, InstanceId
from hpvm.ir.visit import walk

from .compiler import kernel_machine_code
from .machine import MachineSpec

CROSS_TRIPLES = ("aarch64-linux-gnu", "riscv64-linux-gnu")
"""Triples tested here; any triple of LLVM's compiled-in targets works."""

_DEFAULT_FEATURES = {"riscv64": "+m,+a,+f,+d,+c"}
"""riscv64 without the D extension would not match the lp64d Linux ABI."""


def emit_object(module: Module, function_names: Iterable[str] | Mapping[str, int],
                triple: str | None = None, cpu: str | None = None,
                features: str | None = None, opt_level: int = 3) -> bytes:
    """Object code holding one entry ``hpvm_node_<name>`` per function.

    ``function_names``: names (each node's replication rank is found from
    the module's nodes, else from the InstanceId dims the kernel uses) or a
    mapping name -> rank.  ``triple`` None means this machine, with its CPU
    and features or the CPU model ``cpu``; otherwise ``cpu``/``features``
    default to generic.
    """
    for name in function_names:
        if name not in module.functions:
            raise TargetError(f"cpu codegen: module '{module.name}' has no function '@{name}'")
    ranks = (dict(function_names) if isinstance(function_names, Mapping)
             else {name: replication_rank_of(module, name) for name in function_names})
    if triple is None:
        machine = MachineSpec.host() if cpu is None else MachineSpec.for_model(cpu)
    else:
        if features is None:
            features = _DEFAULT_FEATURES.get(triple.split("-")[0], "")
        machine = MachineSpec(triple, cpu or "", features)
    machine.create()  # an unknown triple is reported here, not in the worker
    code = kernel_machine_code(module, ranks, {"opt_level": opt_level}, machine, jit=False)
    return code.object_code


def replication_rank_of(module: Module, function_name: str) -> int:
    """The replication rank of the nodes running ``function_name``; if no
    node (or nodes of different ranks) run it, one more than the highest
    InstanceId/InstanceCount dimension the kernel reads."""
    ranks = {max(len(node.replication), 1)
             for graph in module.graphs.values() for node in graph.nodes
             if isinstance(node.body, KernelBody) and node.body.function == function_name}
    if len(ranks) == 1:
        return ranks.pop()
    function = module.function(function_name)
    dims = [n.dim for n in walk(function.body) if isinstance(n, (InstanceId, InstanceCount))]
    return max(dims, default=0) + 1
