"""hpvm as an ONNX backend (``onnx.backend.base.Backend``), so that onnx's
own backend test suite (``onnx.backend.test``) and other ONNX tooling can
drive it::

    import hpvm.onnx_backend as backend
    rep = backend.prepare(model)                  # the 'interp' target
    outputs = rep.run([x])
    cpu = backend.backend_for("cpu")              # a Backend class per target
    cpu.run_model(model, [x])

A model is imported with hpvm.frontend.onnx (with its default fusion)
and compiled with hpvm.runtime.compile for one target; the ``CUDA``
device is offered by targets that can use a GPU (aten, when PyTorch sees
one).

Inputs that the tensor ops take as attributes (Reshape's shape, Clip's
bounds, Slice's ranges, Split's sizes, Pad's pads) cannot stay run-time
inputs: a model that has them as graph inputs is compiled when it runs,
with their values made initializers, once per distinct value (shape
specialisation, as compiling backends do).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from onnx import ModelProto, NodeProto, helper, numpy_helper
from onnx.backend.base import Backend, BackendRep
from .frontend.onnx import load
from .runtime import compile

GPU_TARGETS = ("aten",)
STATIC_INPUTS = {
    "Reshape": (1,), "Clip": (1, 2), "Slice": (1, 2, 3, 4), "Split": (1,), "Pad": (1, 2, 3),
    "Expand": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2), "Tile": (1,),
    "Unsqueeze": (1,), "Squeeze": (1,), "TopK": (1,), "OneHot": (1,), "Trilu": (1,),
    "CumSum": (1,), "CumProd": (1,), "Resize": (1, 2, 3), "Upsample": (1,),
    "CenterCropPad": (1,), "BlackmanWindow": (0,), "HannWindow": (0,), "HammingWindow": (0,),
    "MelWeightMatrix": (0, 1, 2, 3, 4),
    **{op: (1,) for op in ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean",
                           "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                           "ReduceLogSumExp")},
}
"""ONNX op -> positions of inputs that must be known when compiling."""
SHAPE_ONLY = ("Shape", "Size")
"""Operators that read only their input's shape: a static value computed
from them does not make the data static."""


class HpvmRep(BackendRep):
    """A prepared model: ``run(inputs)`` takes a list (in the model's input
    order) or a dict by ONNX input name and returns the outputs in order."""

    def __init__(self, backend: type["HpvmBackend"], model: ModelProto, device: str,
                 options: dict):
        self.backend, self.model, self.device, self.options = backend, model, device, options
        initialized = {init.name for init in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in initialized]
        self.static = _static_inputs(model) & set(self.input_names)
        self._compiled: dict[bytes, tuple] = {}
        if not self.static:
            self._compiled[b""] = self._compile(model)

    def run(self, inputs, **kwargs):
        values = self._values(inputs)
        executable, params, outputs = self._compiled_for_values(values)
        results = executable(**{params[n]: v for n, v in values.items() if n in params})
        Outputs = namedtuple("Outputs", [f"o{i}" for i in range(len(outputs))])
        return Outputs(*(results[param] for param in outputs))

    def compiled_for(self, inputs) -> tuple:
        """(executable, ONNX input name -> parameter, output parameters) for
        ``inputs`` (as ``run`` takes them): compiled here for the values of
        the static inputs, without running."""
        return self._compiled_for_values(self._values(inputs))

    def _compiled_for_values(self, values: dict[str, np.ndarray]) -> tuple:
        key = b"".join(values[n].tobytes() + str(values[n].dtype).encode()
                       for n in sorted(self.static))
        if key not in self._compiled:
            self._compiled[key] = self._compile(_with_initializers(
                self.model, {n: values[n] for n in self.static}))
        return self._compiled[key]

    def _values(self, inputs) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            return {name: np.asarray(inputs[name]) for name in self.input_names}
        listed = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        return {name: np.asarray(v) for name, v in zip(self.input_names, listed)}

    def _compile(self, model: ModelProto) -> tuple:
        """(executable, ONNX input name -> parameter, output parameters)."""
        module = load(model)
        options = dict(self.options)
        if self.backend.target in GPU_TARGETS:
            options.setdefault("device", "cuda" if self.device == "CUDA" else "cpu")
        executable = compile(module, [self.backend.target], options)
        initialized = {init.name for init in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initialized]
        params = [p.name for p in module.root_graph.params]
        return executable, dict(zip(names, params)), params[len(names):]


def _static_inputs(model: ModelProto) -> set[str]:
    """The tensors at static positions and those they are computed from
    (up to the graph's inputs; not through Shape and Size)."""
    producers = {output: node for node in model.graph.node for output in node.output}
    pending = [node.input[i] for node in model.graph.node
               for i in STATIC_INPUTS.get(node.op_type, ())
               if i < len(node.input) and node.input[i]]
    static: set[str] = set()
    while pending:
        name = pending.pop()
        if name in static:
            continue
        static.add(name)
        producer = producers.get(name)
        if producer is not None and producer.op_type not in SHAPE_ONLY:
            pending.extend(n for n in producer.input if n)
    return static


def _with_initializers(model: ModelProto, values: dict) -> ModelProto:
    """A copy of ``model`` with the graph inputs ``values`` names made
    initializers holding those values."""
    copy = ModelProto()
    copy.CopyFrom(model)
    kept = [i for i in copy.graph.input if i.name not in values]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    copy.graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in values.items())
    return copy


class HpvmBackend(Backend):
    """The backend for target ``target`` (options: ``options``)."""

    target = "interp"
    options: dict = {}

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs) -> HpvmRep:
        super().prepare(model, device, **kwargs)
        return HpvmRep(cls, model, device, {**cls.options, **kwargs})

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
                import torch  # torch (optional, heavy)
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
