"""A test device with memory of its own.

``LoopbackTarget`` behaves like an accelerator: its buffers live in a
private store (so every host <-> device move is a real, counted copy), and
it runs nodes through the reference interpreter.  It is not registered by
default; tests and the SDK conformance kit register it to check the
runtime's memory tracking and placement against a second device.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from ..hookspec import hookimpl
from ..interp.target import InterpTarget
from ..ir.graph import Graph, Module, Node
from ..ir.tensor_ops.precision import PRECISIONS
from ..target import Artifact, ArrayRefused, Device, NodeRef, Target


class LoopbackArray:
    """An array in a loopback device's memory, as ``exe(...,
    outputs="device")`` hands it out and runs take it back (the way a
    device's own array type does: a torch CUDA tensor, a pyopencl array)."""

    def __init__(self, device: "LoopbackDevice", handle: int):
        self.device, self.handle = device, handle

    @property
    def shape(self) -> tuple[int, ...]:
        return self.device.store[self.handle].shape

    @property
    def dtype(self) -> np.dtype:
        return self.device.store[self.handle].dtype

    def get(self) -> np.ndarray:
        """A host copy."""
        return self.device.store[self.handle].copy()

    def __del__(self):
        self.device.free(self.handle)  # its memory goes with it, as a real device array's


class LoopbackDevice(Device):
    def __init__(self, inner: Device, name: str):
        self.name = name
        self.inner = inner
        self.store: dict[int, np.ndarray] = {}
        self.launches: list[NodeRef] = []
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def allocate(self, shape, dtype) -> int:
        with self._lock:
            handle = next(self._ids)
            self.store[handle] = np.zeros(tuple(shape), dtype)
        return handle

    def copy_in(self, handle: int, array) -> None:
        self.store[handle][...] = array

    def copy_out(self, handle: int) -> np.ndarray:
        return self.store[handle].copy()

    def duplicate(self, handle: int, shape, dtype) -> int:
        copy = self.allocate(shape, dtype)
        self.store[copy][...] = self.store[handle]
        return copy

    def free(self, handle: int) -> None:
        with self._lock:
            self.store.pop(handle, None)

    def copy_buffer(self, to: int, source: int) -> None:
        self.store[to][...] = self.store[source]

    def adopt(self, array):
        if not isinstance(array, LoopbackArray):
            return None
        if array.device is not self:
            raise ArrayRefused(f"got an array of another loopback device ({array.device.name})",
                               "make it with this executable's exe.device_array(...)")
        return array.handle, array.shape, array.dtype

    def export(self, handle: int) -> LoopbackArray:
        return LoopbackArray(self, handle)

    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        arrays = {k: self.store[v] if isinstance(v, int) and not isinstance(v, bool)
                  and k in self._buffer_ports(node) else v for k, v in args.items()}
        self.inner.wait(self.inner.launch(node, arrays))
        self.launches.append(node)

    def _buffer_ports(self, node: NodeRef) -> set[str]:
        module = self.inner.module
        graph_node = module.graph(node.graph).node(node.node)
        return {p.name for p in module.node_params(graph_node) if p.is_buffer}


class LoopbackTarget(Target):
    """Claims the nodes whose hint is its name (or every node when
    ``claim_all``); runs them in its own memory."""

    description = "test device: own memory, runs nodes with the interpreter"

    def __init__(self, name: str = "loopback", claim_all: bool = False):
        self.name = name
        self.claim_all = claim_all
        self.devices: list[LoopbackDevice] = []

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        return self.claim_all or node.hint == self.name

    native_precisions = frozenset(PRECISIONS)  # the interpreter's

    @property
    def native_tensor_ops(self) -> frozenset[str]:
        return InterpTarget().native_tensor_ops

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        artifact = InterpTarget().compile(module, nodes, options)
        artifact.target = self.name
        return artifact

    def load(self, artifact: Artifact, options: dict) -> Device:
        device = LoopbackDevice(InterpTarget().load(artifact, options), self.name)
        self.devices.append(device)
        return device


class LoopbackPlugin:
    """A plugin object providing the given loopback targets."""

    def __init__(self, *targets: LoopbackTarget):
        self.targets = list(targets)

    @hookimpl
    def hpvm_targets(self):
        return self.targets
