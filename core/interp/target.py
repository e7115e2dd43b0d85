"""The reference interpreter as a target named ``interp``: it claims every
node, runs every tensor op natively, and its device keeps buffers as numpy
arrays, running each launched node with the interpreter.  It is the
reference device runtime tests compare other targets against.
"""
from __future__ import annotations

import uuid
import weakref
from typing import Any

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location, TargetError
from hpvm.ir.graph import Graph, Module, Node
from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.precision import PRECISIONS
from hpvm.ir.text import parse_module, print_module
from hpvm.target import Artifact, Availability, HostMemoryDevice, NodeRef, Target

from .graph_exec import run_node

MODULE_FILE = "module.hpvm"
_COMPILED: "weakref.WeakValueDictionary[str, Module]" = weakref.WeakValueDictionary()
"""Modules compiled in this process and still alive, by artifact key:
loading them again needs no parser round trip."""


class InterpTarget(Target):
    """Runs anything, slowly and exactly: the golden model."""

    name = "interp"
    description = "reference interpreter (numpy): runs every node, the golden model"
    native_precisions = frozenset(PRECISIONS)

    @property
    def native_tensor_ops(self) -> frozenset[str]:
        return frozenset(TENSOR_OPS)

    def availability(self) -> Availability:
        return Availability.yes(f"numpy {np.__version__}")

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        return True

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        """An artifact holding the module's text (the interpreter needs
        nothing else) and the names of the nodes it will run."""
        key = uuid.uuid4().hex
        _COMPILED[key] = module
        files = {MODULE_FILE: print_module(module).encode()}
        metadata = {"module": module.name, "nodes": [str(n) for n in nodes], "key": key}
        return Artifact(self.name, files, metadata)

    def load(self, artifact: Artifact, options: dict) -> HostMemoryDevice:
        module = _COMPILED.get(artifact.metadata.get("key", ""))
        if module is None:
            module = _parse_artifact(artifact)
        return InterpDevice(module)


def _parse_artifact(artifact: Artifact) -> Module:
    if MODULE_FILE not in artifact.files:
        raise TargetError(f"interp artifact has no '{MODULE_FILE}'; recompile the module "
                          "for target 'interp'")
    return parse_module(artifact.files[MODULE_FILE].decode(), filename=MODULE_FILE)


class InterpDevice(HostMemoryDevice):
    """Host memory as device memory: handles are numpy arrays; ``launch``
    runs a node synchronously, writing its out and inout ports into the
    handles given for them."""

    name = "interp"

    def __init__(self, module: Module):
        self.module = module

    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        graph = self.module.graph(node.graph)
        target = graph.node(node.node)
        params = self.module.node_params(target)
        inputs = {p.name: args[p.name] for p in params
                  if p.direction != "out" and p.name in args}
        results = run_node(self.module, graph, target, inputs)
        for port, value in results.items():
            handle = args.get(port)
            if handle is None:
                continue
            if np.shape(handle) != np.shape(value):
                raise ExecutionError(Diagnostic(
                    Location(graph=node.graph, node=node.node, port=port),
                    f"buffer of shape {list(np.shape(handle))} given for a result of "
                    f"shape {list(np.shape(value))}", "allocate the port with the right shape"))
            handle[...] = value
        return None
