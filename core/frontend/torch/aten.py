"""FX graphs of ATen operators (torch.export, torch.compile) to HPVM Modules.

Each ``call_function`` node is translated to the ONNX operator of the same
meaning and built by the ONNX front end's converters (hpvm.frontend.onnx),
so the two front ends make the same tensor-op nodes and share their
checks; no ONNX model is made.  A node whose tensor inputs are all
constants (weights, their transposes, shapes) is computed by PyTorch itself
at import time, whatever the operator, unless it draws random numbers.
Every node that cannot be translated is collected, and one ParseError
names them all.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np
import torch
from torch.fx.operator_schemas import normalize_function

from ...errors import Diagnostic, Location, ParseError
from ...ir.graph import Module
from ...ir.types import BufferType, scalar_type_of_dtype
from ..onnx.importer import convert_node
from ..onnx.names import UniqueNames, identifier
from ..onnx.values import ConstValue, GraphState, OnnxNode, Unsupported, Value
from .translations import TRANSFORMER_TRANSLATIONS, binary, numpy_dtype, reduce, unary

OPSET = 17
"""The ONNX operator semantics the translations follow."""


def op_name(target) -> str | None:
    """``aten.conv2d`` for torch.ops.aten.conv2d.default (any overload),
    ``getitem`` for operator.getitem; None for anything else."""
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
        return f"aten.{target._opname}"
    return None


def supports(node: torch.fx.Node) -> bool:
    """Whether ``node`` (a call_function) has a translation."""
    return op_name(node.target) in TRANSLATIONS


def convert_graph(graph: torch.fx.Graph, inputs: dict[str, torch.Tensor],
                  constants: dict[str, torch.Tensor], name: str,
                  source: str | None = None,
                  renamed: dict[str, str] | None = None) -> tuple[Module, list[str]]:
    """The Module of ``graph``: placeholders named in ``inputs`` (example
    tensors: their shapes and dtypes) become the root graph's inputs (named
    as ``renamed`` maps them, else as the placeholders), those in
    ``constants`` are weights; ``get_attr`` nodes name entries of
    ``constants`` too.  Returns the module and its output names, in the
    graph's output order."""
    converter = _Converter(source, renamed or {})
    for node in graph.nodes:
        converter.visit(node, inputs, constants)
    if converter.problems:
        raise ParseError(converter.problems)
    return Module(identifier(name, "torch_model"), {}, {"main": converter.state.graph("main")},
                  "main"), converter.outputs


class _Converter:
    def __init__(self, source: str | None, renamed: dict[str, str]):
        self.source = source
        self.renamed = renamed
        self.state = GraphState(UniqueNames())
        self.values: dict[str, Any] = {}
        """fx node name -> Value, or a tuple of them (ops with several results)."""
        self.outputs: list[str] = []
        self.problems: list[Diagnostic] = []
        self._tensors = 0

    def visit(self, node: torch.fx.Node, inputs: dict, constants: dict) -> None:
        try:
            if node.op == "placeholder":
                self._placeholder(node, inputs, constants)
            elif node.op == "get_attr":
                self.values[node.name] = ConstValue(_array(constants[node.target]))
            elif node.op == "call_function":
                self.values[node.name] = self._call(node)
            elif node.op == "output":
                self._output(node)
            else:
                raise Unsupported(f"FX node kind '{node.op}' is not supported",
                                  "export the model with torch.export (ATen operators)")
        except Unsupported as error:
            self.values[node.name] = None
            what = op_name(getattr(node, "target", None)) or str(node.target)
            self.problems.append(Diagnostic(Location(file=self.source, node=node.name),
                                            f"{what}: {error.message}", error.fix))

    def _placeholder(self, node: torch.fx.Node, inputs: dict, constants: dict) -> None:
        if node.name in constants:
            self.values[node.name] = ConstValue(_array(constants[node.name]))
            return
        example = inputs[node.name]
        element = scalar_type_of_dtype(numpy_dtype(example.dtype))
        name = self.renamed.get(node.name, node.name)
        self.state.add_input(name, BufferType(element, tuple(example.shape)))
        self.values[node.name] = self.state.values[name]

    def _call(self, node: torch.fx.Node):
        key = op_name(node.target)
        if key == "getitem":
            results, index = node.args
            chosen = self.values[results.name][index]
            if chosen is None:
                raise Unsupported("this result of the op is not supported",
                                  "use only the first result (the values, not the indices)")
            return chosen
        arguments = self._arguments(node)
        if _all_constant(arguments) and not _random(node):  # PyTorch computes it now
            return self._fold(node)
        if key is None or key not in TRANSLATIONS:
            raise Unsupported("operator not supported by hpvm", "run it in PyTorch (torch.compile "
                              "leaves it to eager), or rewrite it with supported operators")
        return TRANSLATIONS[key](self, node.name, arguments)

    def _arguments(self, node: torch.fx.Node) -> dict[str, Any]:
        """The op's arguments by schema name, defaults filled, FX nodes
        replaced by their Values."""
        normalized = normalize_function(node.target, tuple(node.args), dict(node.kwargs),
                                        normalize_to_only_use_kwargs=True)
        if normalized is None:
            raise Unsupported("its arguments do not match the operator's schema", "")
        return {k: self._value_of(v) for k, v in normalized.kwargs.items()}

    def _value_of(self, argument):
        if isinstance(argument, torch.fx.Node):
            value = self.values[argument.name]
            if value is None:
                raise Unsupported(f"its input '{argument.name}' could not be converted", "")
            return value
        if isinstance(argument, (list, tuple)):
            return type(argument)(self._value_of(a) for a in argument)
        return argument

    def _fold(self, node: torch.fx.Node) -> Any:
        """The op computed now, on its constant inputs."""
        def tensors(argument):
            if isinstance(argument, torch.fx.Node):
                return torch.from_numpy(self.values[argument.name].array.copy())
            if isinstance(argument, (list, tuple)):
                return type(argument)(tensors(a) for a in argument)
            return argument
        with torch.no_grad():
            result = node.target(*tensors(tuple(node.args)),
                                 **{k: tensors(v) for k, v in node.kwargs.items()})
        if result is None:  # a check such as aten._assert_tensor_metadata
            return None
        if isinstance(result, (tuple, list)):
            return tuple(ConstValue(_array(r)) if isinstance(r, torch.Tensor) else None
                         for r in result)
        return ConstValue(_array(result))

    def _output(self, node: torch.fx.Node) -> None:
        results = node.args[0]
        results = list(results) if isinstance(results, (tuple, list)) else [results]
        for index, result in enumerate(results):
            name = "y" if len(results) == 1 else f"y{index}"
            value = self.values.get(result.name) if isinstance(result, torch.fx.Node) else None
            if value is None:
                raise Unsupported(f"output {index} is not a tensor the graph computes",
                                  "return tensors only")
            self.state.add_output(name, value)
            self.outputs.append(self.state.params[-1].name)

    # building ------------------------------------------------------------
    def onnx(self, name: str, op_type: str, inputs: list, attrs: dict | None = None,
             outputs: int = 1) -> list[Value]:
        """The Values of an ONNX ``op_type`` node on ``inputs`` (Values,
        numpy arrays for constants, or None for an omitted input)."""
        names = [self._tensor(v) if v is not None else "" for v in inputs]
        node = OnnxNode(self.state.node_names.make(name, op_type.lower()), op_type, names,
                        [f"{name}_{i}" for i in range(outputs)], dict(attrs or {}))
        return convert_node(self.state, node, OPSET)

    def _tensor(self, value) -> str:
        """A fresh tensor name standing for ``value``."""
        if isinstance(value, np.ndarray):
            value = ConstValue(value)
        self._tensors += 1
        name = f"%t{self._tensors}"
        self.state.values[name] = value
        return name


def _random(node: torch.fx.Node) -> bool:
    """Whether the op draws random numbers (folding would freeze them)."""
    return torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ())


def _all_constant(arguments: dict) -> bool:
    def tensors(value):
        if isinstance(value, (list, tuple)):
            return [t for v in value for t in tensors(v)]
        return [value] if not isinstance(value, (int, float, bool, str, type(None),
                                                 torch.dtype, torch.device,
                                                 torch.memory_format, torch.layout)) else []
    found = tensors(list(arguments.values()))
    return all(isinstance(t, ConstValue) for t in found)


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().contiguous().numpy().copy()



def _pair(value, what: str) -> tuple[int, int]:
    values = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise Unsupported(f"{what} {list(values)} is not 2-D", "use 2-D convolution and pooling")
    return int(values[0]), int(values[1])


# translations ------------------------------------------------------------
Translation = Callable[[_Converter, str, dict], Any]


def _conv(c: _Converter, name: str, a: dict):
    """conv1d, conv2d and convolution (1-D or 2-D; not transposed)."""
    if a.get("transposed"):
        raise Unsupported("transposed convolution is not supported", "use a plain convolution")
    spatial = len(a["input"].type.shape) - 2
    padding = a["padding"]
    if isinstance(padding, str):
        if padding != "valid":
            raise Unsupported(f"padding='{padding}' is not supported", "give explicit padding")
        padding = (0,) * spatial
    pads = list(_widths(padding, spatial, "padding"))
    attrs = {"strides": list(_widths(a["stride"], spatial, "stride")), "pads": pads + pads,
             "dilations": list(_widths(a["dilation"], spatial, "dilation")),
             "group": int(a["groups"])}
    return c.onnx(name, "Conv", [a["input"], a["weight"], a.get("bias")], attrs)[0]


def _widths(value, spatial: int, what: str) -> tuple[int, ...]:
    """A window attribute with one entry per spatial axis (1-D or 2-D)."""
    if spatial == 2:
        return _pair(value, what)
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * spatial
    if len(values) != spatial or spatial not in (1, 2):
        raise Unsupported(f"{what} {list(values)} of a {spatial}-D convolution",
                          "use 1-D or 2-D convolution")
    return tuple(int(v) for v in values)


def _addmm(c: _Converter, name: str, a: dict):
    return c.onnx(name, "Gemm", [a["mat1"], a["mat2"], a["input"]],
                  {"alpha": float(a["alpha"]), "beta": float(a["beta"])})[0]


def _pool(op_type: str, indices: bool = False) -> Translation:
    def translate(c: _Converter, name: str, a: dict):
        kernel = _pair(a["kernel_size"], "kernel_size")
        stride = _pair(a["stride"] or kernel, "stride")
        top, left = _pair(a["padding"], "padding")
        attrs = {"kernel_shape": list(kernel), "strides": list(stride),
                 "pads": [top, left, top, left], "ceil_mode": int(bool(a["ceil_mode"]))}
        if "dilation" in a:
            attrs["dilations"] = list(_pair(a["dilation"], "dilation"))
        if op_type == "AveragePool":
            if a.get("divisor_override") is not None:
                raise Unsupported("divisor_override is not supported", "leave it None")
            attrs["count_include_pad"] = int(bool(a["count_include_pad"]))
        value = c.onnx(name, op_type, [a["input"]], attrs)[0]
        return (value, None) if indices else value
    return translate


def _global_avg(c: _Converter, name: str, a: dict):
    size = a.get("output_size")
    if size is not None and tuple(size) != (1, 1):
        raise Unsupported(f"adaptive pooling to {list(size)} is not supported",
                          "pool to (1, 1)")
    return c.onnx(name, "GlobalAveragePool", [a["input"]])[0]


def _mean(c: _Converter, name: str, a: dict):
    """A mean over two axes of a rank-4 tensor is global average pooling
    (those axes moved last first: NHWC's spatial axes are 1 and 2); any
    other mean a ReduceMean."""
    x, dims = a["input"], a.get("dim")
    shape = x.type.shape
    rank = len(shape)
    axes = sorted({d % rank for d in (dims or ())})
    if rank != 4 or len(axes) != 2 or len(dims) != 2:
        return reduce("ReduceMean")(c, name, a)
    kept = [d for d in range(rank) if d not in axes]
    if axes != [2, 3]:
        x = c.onnx(f"{name}_move", "Transpose", [x], {"perm": kept + axes})[0]
    pooled = c.onnx(name, "GlobalAveragePool", [x])[0]
    result = [1 if d in axes else shape[d] for d in range(rank)] if a.get("keepdim") \
        else [shape[d] for d in kept]
    if a.get("keepdim") and axes == [2, 3]:
        return pooled
    return c.onnx(f"{name}_shape", "Reshape", [pooled, np.array(result, np.int64)])[0]


def _reshape(c: _Converter, name: str, a: dict):
    x = a["input"]
    shape = a.get("size", a.get("shape"))
    return c.onnx(name, "Reshape", [x, np.array(list(shape), np.int64)])[0]


def _flatten(c: _Converter, name: str, a: dict):
    x = a["input"]
    rank = len(x.type.shape)
    start, end = a["start_dim"] % rank, a["end_dim"] % rank
    if end != rank - 1:
        raise Unsupported(f"flatten ending at dimension {a['end_dim']} is not supported",
                          "flatten to the last dimension")
    return c.onnx(name, "Flatten", [x], {"axis": start})[0]


def _hardtanh(c: _Converter, name: str, a: dict):
    low = a.get("min_val", 0.0)
    high = a.get("max_val", 6.0)
    return c.onnx(name, "Clip", [a["input"], np.array(low, np.float32),
                                 np.array(high, np.float32)])[0]


def _batch_norm(legit: bool) -> Translation:
    def translate(c: _Converter, name: str, a: dict):
        if a.get("training"):
            raise Unsupported("batch_norm in training mode is not supported",
                              "export the model in eval mode (model.eval())")
        value = c.onnx(name, "BatchNormalization",
                       [a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"]],
                       {"epsilon": float(a["eps"])})[0]
        return (value, None, None) if legit else value
    return translate


def _cat(c: _Converter, name: str, a: dict):
    return c.onnx(name, "Concat", list(a["tensors"]), {"axis": int(a["dim"])})[0]


def _softmax(c: _Converter, name: str, a: dict):
    return c.onnx(name, "Softmax", [a["input"]],
                  {"axis": int(a["dim"])})[0]


def _same(c: _Converter, name: str, a: dict):
    """Ops that do not change values at inference (dropout in eval, copies)."""
    if a.get("train"):
        raise Unsupported("dropout in training mode is not supported", "call model.eval()")
    return a["input"]


def _permute(c: _Converter, name: str, a: dict):
    return c.onnx(name, "Transpose", [a["input"]], {"perm": [int(d) for d in a["dims"]]})[0]


def _swap(c: _Converter, name: str, a: dict):
    """aten.transpose (two dims swapped) and aten.t (a matrix's transpose)."""
    x = a["input"]
    rank = len(x.type.shape)
    perm = list(range(rank))
    first, second = (a["dim0"] % rank, a["dim1"] % rank) if "dim0" in a else (0, rank - 1)
    perm[first], perm[second] = perm[second], perm[first]
    return c.onnx(name, "Transpose", [x], {"perm": perm})[0] if rank > 1 else x


def _pad(c: _Converter, name: str, a: dict):
    """aten.pad / constant_pad_nd: torch lists (leading, trailing) pairs
    from the last axis backwards; ONNX every leading amount, then every
    trailing one."""
    x = a["input"]
    rank = len(x.type.shape)
    pairs = list(a["pad"])
    leading, trailing = [0] * rank, [0] * rank
    for position in range(len(pairs) // 2):
        axis = rank - 1 - position
        leading[axis], trailing[axis] = pairs[2 * position], pairs[2 * position + 1]
    mode = {"constant": "constant", "replicate": "edge", "reflect": "reflect"}.get(
        a.get("mode", "constant"))
    if mode is None:
        raise Unsupported(f"padding mode '{a['mode']}' is not supported",
                          "use constant, replicate or reflect padding")
    value = a.get("value") or 0.0
    return c.onnx(name, "Pad", [x, np.array(leading + trailing, np.int64),
                                np.array(value, np.float32)], {"mode": mode})[0]


def _matmul(c: _Converter, name: str, a: dict):
    """aten.matmul / mm; a rank > 3 left operand times a matrix (a Dense
    layer on feature maps) as a matrix product of its rows."""
    left, right = a["input"], a.get("other", a.get("mat2"))
    shape = left.type.shape
    right_rank = len(right.array.shape) if isinstance(right, ConstValue) else len(right.type.shape)
    if len(shape) <= 3 or right_rank != 2:
        return c.onnx(name, "MatMul", [left, right])[0]
    rows = c.onnx(f"{name}_rows", "Reshape", [left, np.array([-1, shape[-1]], np.int64)])[0]
    product = c.onnx(name, "MatMul", [rows, right])[0]
    return c.onnx(f"{name}_shape", "Reshape",
                  [product, np.array([*shape[:-1], -1], np.int64)])[0]


def _checked(c: _Converter, name: str, a: dict):
    """aten._assert_tensor_metadata: a trace-time check with no result."""
    return None


TRANSLATIONS: dict[str, Translation] = {
    "aten.conv1d": _conv, "aten.conv2d": _conv, "aten.convolution": _conv,
    "aten.addmm": _addmm,
    "aten.max_pool2d": _pool("MaxPool"),
    "aten.max_pool2d_with_indices": _pool("MaxPool", indices=True),
    "aten.avg_pool2d": _pool("AveragePool"),
    "aten.adaptive_avg_pool2d": _global_avg, "aten._adaptive_avg_pool2d": _global_avg,
    "aten.mean": _mean,
    "aten.view": _reshape, "aten.reshape": _reshape, "aten._unsafe_view": _reshape,
    "aten.flatten": _flatten,
    "aten.add": binary("Add"), "aten.mul": binary("Mul"), "aten.sub": binary("Sub"),
    "aten.subtract": binary("Sub"),
    "aten.relu": unary("Relu"), "aten.sigmoid": unary("Sigmoid"), "aten.tanh": unary("Tanh"),
    "aten.hardtanh": _hardtanh, "aten.relu6": _hardtanh,
    "aten.batch_norm": _batch_norm(False),
    "aten._native_batch_norm_legit_no_training": _batch_norm(True),
    "aten.cat": _cat, "aten.softmax": _softmax, "aten._softmax": _softmax,
    "aten.dropout": _same, "aten.clone": _same, "aten.contiguous": _same,
    "aten.detach": _same, "aten.alias": _same,
    "aten.t": _swap, "aten.permute": _permute, "aten.transpose": _swap,
    "aten.matmul": _matmul, "aten.mm": _matmul,
    "aten.pad": _pad, "aten.constant_pad_nd": _pad,
    "aten._assert_tensor_metadata": _checked, **TRANSFORMER_TRANSLATIONS,
}
"""Translations by op; every op also folds when its inputs are constants."""
