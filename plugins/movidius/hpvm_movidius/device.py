"""The movidius runtime shim: each partition an OpenVINO compiled model.

Buffers are numpy arrays in host memory (``host_memory``): OpenVINO reads
the inputs and writes the outputs in place through tensors sharing their
memory, so no copy is made on either side.  ``launch`` starts an
asynchronous inference (``start_async``) on an infer request taken from
the partition's pool and ``wait`` waits for it; OpenVINO releases the GIL
meanwhile, so the scheduler runs other nodes beside it.  Several runs in
flight (streams, ``launch``) each get their own request.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.target import HostMemoryDevice, NodeRef

from .ov_errors import message


MAX_SHAPES = 8
"""Input shapes a partition with dynamic dims is compiled for, each static."""


@dataclass
class _Running:
    node: NodeRef
    request: Any
    pool: "queue.SimpleQueue"


class OpenVinoDevice(HostMemoryDevice):
    def __init__(self, models: dict[str, Any], compile_model: Callable[[Any], Any], device: str,
                 label: str = ""):
        """``models``: ``str(NodeRef)`` of each partition -> its ``ov.Model``;
        ``compile_model(model)``: the model compiled for OpenVINO device
        ``device``."""
        self.name = f"movidius:{device}"
        self.timing_label = label
        self._models = models
        self._compile = compile_model
        self._compiled: dict[tuple, Any] = {}
        self._pools: dict[tuple, queue.SimpleQueue] = {}
        self._lock = threading.Lock()
        for key, model in models.items():  # compile errors show at load, not mid-run
            self._compiled[(key, None)] = compile_model(model)

    def launch(self, node: NodeRef, args: dict[str, Any]) -> _Running:
        import openvino as ov
        key = self._specialised(str(node), args)
        pool = self._pools[key]
        try:
            request = pool.get_nowait()
        except queue.Empty:
            request = self._compiled[key].create_infer_request()
        try:
            for port, value in args.items():
                array = np.require(value, requirements="C")  # 0-d stays 0-d
                request.set_tensor(port, ov.Tensor(array, shared_memory=True))
            request.start_async()
        except Exception as error:
            pool.put(request)
            raise _failed(node, error) from None
        return _Running(node, request, pool)

    def _specialised(self, key: str, args: dict[str, Any]) -> tuple:
        """The compiled model of partition ``key`` for the input shapes of
        ``args``: a model with dynamic dims (a batch symbol) is compiled
        once per input shape, static, which OpenVINO runs much faster;
        past MAX_SHAPES shapes the dynamic model serves the rest."""
        model = self._models[key]
        if all(p.get_partial_shape().is_static for p in model.inputs):
            shapes = None
        else:
            shapes = tuple((p.any_name, tuple(np.shape(args[p.any_name]))) for p in model.inputs)
        wanted = (key, shapes)
        if wanted not in self._compiled:
            with self._lock:
                if wanted not in self._compiled:
                    if sum(1 for k in self._compiled if k[0] == key) > MAX_SHAPES:
                        wanted = (key, None)
                    else:
                        static = model.clone()
                        static.reshape({name: list(shape) for name, shape in shapes})
                        self._compiled[wanted] = self._compile(static)
        if wanted not in self._pools:
            with self._lock:
                self._pools.setdefault(wanted, queue.SimpleQueue())
        return wanted

    def wait(self, event: _Running) -> None:
        try:
            event.request.wait()
        except Exception as error:
            raise _failed(event.node, error) from None
        finally:
            event.pool.put(event.request)


def _failed(node: NodeRef, error: Exception) -> ExecutionError:
    return ExecutionError(Diagnostic(
        Location(graph=node.graph, node=node.node),
        f"movidius: OpenVINO inference failed: {message(error)}",
        "run these nodes on another target (drop 'movidius' from targets), or try "
        "device='CPU'"))
