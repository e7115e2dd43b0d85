"""The 'aten' target: tensor ops run by PyTorch's ATen kernels.

Matcher: tensor-op nodes of the ops in :data:`ops.OPS` (the pointwise,
reduction, indexing and data-movement ops on any element type but u16,
u32 and u64, which few ATen kernels take; the others on floats), and
constant nodes read only by such nodes (so weights stay on the
device); kernel nodes are left to other targets.  Code generator: nothing
to generate; the artifact is the module's text.  Runtime shim:
:class:`AtenDevice` on ``cuda`` when PyTorch sees a GPU, else ``cpu``.

Options: ``device`` (``cpu``, ``cuda``, ``cuda:1`` ...; default ``cuda``
when PyTorch sees a GPU) and ``precision`` (``fp32``, the default: IEEE
single precision, TF32 tensor cores off; ``tf32``: convolutions and
matrix products on TF32 tensor cores; ``fp16``: float ops compute in half
precision; buffers stay as the module declares them).  ``dtype=float16`` is the older spelling of
``precision=fp16``.
"""
from __future__ import annotations

from hpvm.errors import TargetError
from hpvm.ir.graph import ConstantBody, Graph, Module, Node, TensorBody
from hpvm.ir.tensor_ops.precision import PRECISIONS as NODE_PRECISIONS
from hpvm.options import Option
from hpvm.target import Artifact, Availability, Device, NodeRef, Target

MODULE_FILE = "module.hpvm"
WIDE_UNSIGNED = ("u16", "u32", "u64")
"""Element types few ATen kernels take: nodes with them are left to others."""
ANY_TYPE_OPS = frozenset({
    "unary", "binary", "select", "cast", "reduce", "arg_reduce", "expand", "gather",
    "gather_elements", "cumsum", "add", "mul", "reshape", "flatten", "concat", "slice",
    "transpose", "pad", "bitcast", "scatter", "sort",
})
"""Ops aten runs on integers and bools too (the others, floats only: ATen's
pooling pads with -inf, its CUDA matrix products take no integers)."""
MASKED_OPS = frozenset({"rowwise", "attention"})
"""Float ops whose programs may read bool inputs (masks, select's conditions)."""
PRECISIONS = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16",
              "tf32": "tf32"}
"""Values of the ``precision`` option (and of its old name ``dtype``) ->
the torch dtype float ops compute in."""


OPTIONS = [
    Option("device", str, None, "torch device: cpu, cuda, cuda:1 ...; None: cuda when "
           "PyTorch sees a GPU, else cpu"),
    Option("precision", str, "fp32", "precision float ops compute in", choices=tuple(PRECISIONS)),
    Option("dtype", str, None, "older name of precision", choices=tuple(PRECISIONS)),
    Option("cuda_graphs", bool, True, "on CUDA, run a program placed wholly on aten as one "
           "captured CUDA graph per input shape (launch cost paid once)"),
]


class AtenTarget(Target):
    name = "aten"
    description = "tensor ops on ATen (PyTorch) kernels: CPU, or CUDA when a GPU is visible"

    native_precisions = frozenset(NODE_PRECISIONS)

    @property
    def native_tensor_ops(self) -> frozenset[str]:
        try:
            from .ops import OPS
        except ImportError:
            return frozenset()
        return frozenset(OPS)

    def availability(self) -> Availability:
        try:
            import torch
        except ImportError as error:
            return Availability.no(f"PyTorch cannot be imported ({error}); pip install torch")
        where = f"CUDA ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "CPU"
        return Availability.yes(f"torch {torch.__version__} on {where}")

    def options(self) -> list[Option]:
        return OPTIONS

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        if isinstance(node.body, TensorBody):
            return self._runs(node)
        if isinstance(node.body, ConstantBody):
            readers = [graph.node(e.dst_node) for e in graph.edges if e.src_node == node.name]
            return bool(readers) and all(self._runs(r) for r in readers)
        return False

    def _runs(self, node: Node) -> bool:
        body = node.body
        if not isinstance(body, TensorBody) or body.op not in self.native_tensor_ops:
            return False
        if any(p.type.element.is_narrow for p in body.params):
            return False  # bf16, float8 ... are storage types: the cpu converts them
        if body.op in ANY_TYPE_OPS:
            return not any(p.type.element.name in WIDE_UNSIGNED for p in body.params)
        if body.op in MASKED_OPS:
            return all(p.type.element.is_float or p.type.element.is_bool and p.direction == "in"
                       for p in body.params)
        return all(p.type.element.is_float for p in body.params)

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from hpvm.ir.text import print_module
        _compute_dtype(options)
        return Artifact(self.name, {MODULE_FILE: print_module(module).encode()},
                        {"nodes": [str(n) for n in nodes]})

    def load(self, artifact: Artifact, options: dict) -> Device:
        import torch
        from hpvm.ir.text import parse_module
        from .device import AtenDevice
        module = parse_module(artifact.files[MODULE_FILE].decode(), filename=MODULE_FILE)
        device = options.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            raise TargetError(f"aten: device '{device}' requested but PyTorch sees no CUDA GPU; "
                              "use device='cpu'")
        dtype = _compute_dtype(options)
        return AtenDevice(module, device,
                          getattr(torch, dtype) if dtype not in ("float32", "tf32") else None,
                          cuda_graphs=bool(options.get("cuda_graphs", True)),
                          all_tf32=dtype == "tf32")


def _compute_dtype(options: dict) -> str:
    """The torch dtype name float ops compute in, from ``precision`` (or
    ``dtype``); TargetError naming the accepted values otherwise."""
    key = "precision" if "precision" in options else "dtype"
    value = str(options.get(key, "fp32")).lower()
    if value not in PRECISIONS:
        raise TargetError(f"aten: option {key}={options[key]!r} is not supported; use "
                          "precision='fp32', 'tf32' or 'fp16'")
    return PRECISIONS[value]
