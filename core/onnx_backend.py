"""hpvm as an ONNX backend (``onnx.backend.base.Backend``), so that onnx's
own backend test suite (``onnx.backend.test``) and other ONNX tooling can
drive it::

    import hpvm.onnx_backend as backend
    rep = backend.prepare(model)                  # the 'interp' target
    outputs = rep.run([x])
    cpu = backend.backend_for("cpu")              # a Backend class per target
    cpu.run_model(model, [x])

A model is imported with hpvm.frontend.onnx and compiled with
hpvm.runtime.compile for one target; the ``CUDA`` device is offered by
targets that can use a GPU (aten, when PyTorch sees one).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from onnx import ModelProto, NodeProto, helper
from onnx.backend.base import Backend, BackendRep

GPU_TARGETS = ("aten",)


class HpvmRep(BackendRep):
    """A prepared model: ``run(inputs)`` takes a list (in the model's input
    order) or a dict by ONNX input name and returns the outputs in order."""

    def __init__(self, executable, inputs: list[tuple[str, str]], outputs: list[tuple[str, str]]):
        self.executable = executable
        self.inputs = inputs      # (ONNX name, hpvm parameter name)
        self.outputs = outputs

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            given = {param: inputs[name] for name, param in self.inputs}
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            given = {param: value for (_, param), value in zip(self.inputs, values)}
        results = self.executable(**{k: np.asarray(v) for k, v in given.items()})
        Outputs = namedtuple("Outputs", [f"o{i}" for i in range(len(self.outputs))])
        return Outputs(*(results[param] for _, param in self.outputs))


class HpvmBackend(Backend):
    """The backend for target ``target`` (options: ``options``)."""

    target = "interp"
    options: dict = {}

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs) -> HpvmRep:
        from .frontend.onnx import load
        from .runtime import compile
        super().prepare(model, device, **kwargs)
        module = load(model)
        options = {**cls.options, **kwargs}
        if cls.target in GPU_TARGETS:
            options.setdefault("device", "cuda" if device == "CUDA" else "cpu")
        executable = compile(module, [cls.target], options)
        params = [p.name for p in module.root_graph.params]
        initialized = {init.name for init in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initialized]
        names += [o.name for o in model.graph.output]
        pairs = list(zip(names, params))
        return HpvmRep(executable, pairs[:len(names) - len(model.graph.output)],
                       pairs[len(names) - len(model.graph.output):])

    @classmethod
    def run_model(cls, model: ModelProto, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: NodeProto, inputs, device: str = "CPU", outputs_info=None,
                 **kwargs):
        """Run one node on ``inputs`` (arrays, in the node's input order)."""
        values = [np.asarray(v) for v in inputs]
        graph_inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(
            v.dtype), v.shape) for name, v in zip(node.input, values)]
        graph_outputs = [helper.make_tensor_value_info(name, 0, None) for name in node.output]
        graph = helper.make_graph([node], "node", graph_inputs, graph_outputs)
        model = helper.make_model(graph)
        return cls.run_model(model, values, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        if device == "CPU":
            return True
        if device == "CUDA" and cls.target in GPU_TARGETS:
            try:
                import torch
            except ImportError:
                return False
            return torch.cuda.is_available()
        return False


def backend_for(target: str, **options) -> type[HpvmBackend]:
    """A Backend class running models on ``target`` with compile
    ``options`` (e.g. ``backend_for("aten", dtype="float16")``)."""
    return type(f"HpvmBackend_{target}", (HpvmBackend,), {"target": target, "options": options})


prepare = HpvmBackend.prepare
run_model = HpvmBackend.run_model
run_node = HpvmBackend.run_node
supports_device = HpvmBackend.supports_device
