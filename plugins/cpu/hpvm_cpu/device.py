"""The cpu target's device: host memory (numpy arrays), each node run by
its JIT-compiled kernel with replication dimension 0 split across the
cores.

Besides what the runtime passes, a node's kernel may read packed weights
(relaid constants) and inputs padded by a kernel run just before it
(lower_tensor_nodes' PADS_INPUT_OF nodes, into a buffer this device
keeps): both are looked up in the lowered module on a node's first
launch.
"""
from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np

from hpvm.ir.graph import KernelBody, Module, TensorBody
from hpvm.target import HostMemoryDevice, NodeRef

PARALLEL_CLEAR_BYTES = 1 << 20
"""From this size the cpu device clears and copies a buffer on every core.
One thread clears about 10 GB/s (18 MiB: 1.8 ms), which is why large
intermediates used to be made afresh in each run, paying page faults
instead; kept in the arena and cleared by the pool, camera with the default
pipeline took 3.0 ms per call on 16 threads of the lent Xeon instead of
3.9, and srad 16-17 ms instead of 39 (its 64 MB copy)."""


class Padding(NamedTuple):
    """The kernel that pads an input of a node, its replication and the
    padded buffer's type (symbols: the input's sizes there)."""

    kernel: Any
    replication: tuple
    type: Any

    def buffer_shape(self, value: np.ndarray) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else value.shape[axis]
                     for axis, d in enumerate(self.type.shape))

    def empty(self, value: np.ndarray) -> np.ndarray:
        return np.empty(self.buffer_shape(value), value.dtype)


class CpuDevice(HostMemoryDevice):
    """Host memory; nodes run as JIT-compiled machine code."""

    name = "cpu"
    multicore_launch = True
    """A node's instances are split across the cores (codegen/jit.py)."""

    def __init__(self, module: Module, kernels: dict, threads: int | None = None):
        from hpvm.interp.target import InterpDevice
        self.module = module
        self.kernels = kernels
        self.parallel_clear = threads != 1
        """Buffers of PARALLEL_CLEAR_BYTES or more are cleared and copied
        by the native pool (codegen/thread_pool.py), unless the ``threads``
        option keeps the program on one thread."""
        self._numpy = InterpDevice(module)
        """Runs the tensor nodes kept for BLAS (their numpy evaluation)."""
        self._nodes: dict[NodeRef, tuple] = {}
        self._padded = threading.local()
        """Per thread, (node, port) -> the buffer an input was last padded
        into (launch; a bound launch keeps its own)."""

    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        body, kernel, replication, relaid, padding = self._node(node)
        if isinstance(body, TensorBody):  # matmul, gemm: numpy's BLAS
            return self._numpy.launch(node, args)
        if kernel is None:
            args["value"][...] = body.data
            return None
        if padding:
            args = {**args, **self._pad_inputs(node, args, padding)}
        # The kernel checks every argument and binds the shape symbols the
        # replication needs while it packs them.
        kernel.run_replicated({**args, **relaid} if relaid else args, replication)
        return None

    def _pad_inputs(self, node: NodeRef, args: dict, padding: dict) -> dict:
        """Port -> ``args[port]`` padded (by its Padding's kernel) into a
        buffer kept for this node and thread."""
        kept = self._padded.__dict__.setdefault("buffers", {})
        padded = {}
        for port, pad in padding.items():
            value = args[port]
            buffer = kept.get((node, port))
            if buffer is None or buffer.shape != pad.buffer_shape(value) \
                    or buffer.dtype != value.dtype:
                buffer = kept[(node, port)] = pad.empty(value)
            pad.kernel.run_replicated({"x": value, "y": buffer}, pad.replication)
            padded[port] = buffer
        return padded

    def clear(self, handle: np.ndarray) -> None:
        pool = self._pool_for(handle)
        if pool is None:
            super().clear(handle)
        else:
            pool.clear(handle)

    def copy_buffer(self, to: np.ndarray, source: np.ndarray) -> None:
        pool = self._pool_for(to, source)
        if pool is None or (to.shape, to.dtype) != (source.shape, source.dtype):
            super().copy_buffer(to, source)
        else:
            pool.copy(to, source)

    def _pool_for(self, *arrays: np.ndarray):
        """The native pool, when ``arrays`` are to be cleared or copied on
        it; else None."""
        if not (self.parallel_clear and arrays[0].nbytes >= PARALLEL_CLEAR_BYTES
                and all(a.flags.c_contiguous for a in arrays)):
            return None
        from .codegen.thread_pool import thread_pool
        return thread_pool()

    def bind(self, node: NodeRef, args: dict[str, Any]):
        body, kernel, replication, relaid, padding = self._node(node)
        if kernel is None:  # a constant or a BLAS op
            return super().bind(node, args)
        if not padding:
            return kernel.bind({**args, **relaid} if relaid else args, replication)
        before = {}
        args = dict(args)
        for port, pad in padding.items():
            buffer = pad.empty(args[port])
            before[port] = pad.kernel.bind({"x": args[port], "y": buffer}, pad.replication)
            args[port] = buffer
        return PaddedLaunch(before, kernel.bind({**args, **relaid}, replication))

    def _node(self, node: NodeRef) -> tuple:
        """(body, compiled kernel or None for a constant, replication,
        port -> the packed weights the kernel reads there instead of what
        the runtime passes, port -> the Padding of an input the kernel
        reads padded), looked up on the node's first launch."""
        found = self._nodes.get(node)
        if found is None:
            from hpvm.passes.legalize_tensor_ops import padded_inputs, relaid_inputs
            graph = self.module.graph(node.graph)
            graph_node = graph.node(node.node)
            body = graph_node.body
            kernel = self.kernels[body.function] if isinstance(body, KernelBody) else None
            padding = {port: Padding(self.kernels[before.body.function], before.replication,
                                     _padded_type(self.module, before))
                       for port, before in padded_inputs(graph, node.node).items()}
            found = self._nodes[node] = (body, kernel, graph_node.replication,
                                         relaid_inputs(graph, node.node), padding)
        return found


def _padded_type(module: Module, padding_node) -> Any:
    """The type of what a padding node's kernel makes (its port ``y``)."""
    params = module.functions[padding_node.body.function].params
    return next(p.type for p in params if p.name == "y")


class PaddedLaunch:
    """A bound launch (jit.BoundKernel) of a node that reads inputs padded
    by the bound launches ``before`` (port -> launch), into buffers of its
    own: a call pads the changed inputs' new arrays, or pads again the
    ones bound first, then runs the node."""

    def __init__(self, before: dict, main):
        self._before = before
        self._main = main

    def __call__(self, changed: dict[str, Any]):
        for port, pad in self._before.items():
            pad({"x": changed[port]} if port in changed else {})
        return self._main({k: v for k, v in changed.items() if k not in self._before})
