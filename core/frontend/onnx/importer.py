"""From an ONNX ModelProto to an HPVM Module.

The root graph ``@main`` takes the model's inputs (initializers excluded)
and returns its outputs; every ONNX node becomes a tensor-op node, an
import-time constant (shapes.py) or an alias.  Sizes an input declares
with ``dim_param`` (a dynamic batch) become shape symbols.  Every node the
importer cannot express is collected, and one ParseError lists them all.
"""
from __future__ import annotations

from collections import defaultdict

from ...errors import Diagnostic, Location, ParseError
from ...ir.graph import Module
from ...ir.types import BufferType
from .converters import OPSET_CONVERTERS, TENSOR_CONVERTERS
from .names import ELEMENT_TYPES, UniqueNames, identifier, symbol_name
from .shapes import FOLDED_OPS, fold
from .values import ConstValue, GraphState, OnnxNode, Unsupported


KNOWN_OPS = frozenset(TENSOR_CONVERTERS) | frozenset(OPSET_CONVERTERS) | FOLDED_OPS
"""ONNX operators the importer converts (some only on constants)."""


def import_model(model, source: str | None = None) -> Module:
    """The Module of ONNX ``model`` (a ModelProto); ``source`` names the
    file in error messages."""
    from onnx import helper, numpy_helper  # onnx (heavy)

    graph = model.graph
    opset = _default_opset(model)
    state = GraphState(UniqueNames())
    for init in graph.initializer:
        state.values[init.name] = ConstValue(numpy_helper.to_array(init))
    initialized = {init.name for init in graph.initializer}
    problems: list[Diagnostic] = []
    for info in graph.input:
        if info.name not in initialized:
            try:
                state.add_input(info.name, _input_type(info))
            except Unsupported as error:
                problems.append(_diagnostic(source, info.name, None, error))
    unsupported: dict[str, list[str]] = defaultdict(list)
    failed: set[str] = set()
    state.node_names.taken.update(p.name for p in state.params)
    for index, proto in enumerate(graph.node):
        name = state.node_names.make(proto.name or f"{proto.op_type}_{index}",
                                     proto.op_type.lower())
        node = OnnxNode(name, proto.op_type, list(proto.input), list(proto.output),
                        {a.name: helper.get_attribute_value(a) for a in proto.attribute},
                        proto.domain)
        if any(i in failed for i in node.inputs if i):
            if not known(node):
                unsupported[_qualified(proto)].append(proto.name or name)
            failed.update(node.outputs)
            continue
        try:
            outputs = convert_node(state, node, opset)
        except UnknownOperator:
            unsupported[_qualified(proto)].append(proto.name or name)
            failed.update(node.outputs)
            continue
        except Unsupported as error:
            failed.update(node.outputs)
            problems.append(_diagnostic(source, proto.name or name, proto.op_type, error))
            continue
        for output, value in zip(node.outputs, outputs):
            if output:
                state.values[output] = value
    problems = _unsupported_summary(source, unsupported) + problems
    if problems:
        raise ParseError(problems)
    state.names.taken.update(n.name for n in state.nodes)
    for info in graph.output:
        state.add_output(info.name, state.value(info.name))
    module_name = identifier(graph.name or "onnx_model", "onnx_model")
    return Module(module_name, {}, {"main": state.graph("main")}, "main")


def _default_opset(model) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 13


def _qualified(proto) -> str:
    return proto.op_type if proto.domain in ("", "ai.onnx") else f"{proto.domain}.{proto.op_type}"


def known(node: OnnxNode) -> bool:
    """Whether the importer has a converter for ``node``'s operator."""
    return node.domain in ("", "ai.onnx") and node.op_type in KNOWN_OPS


class UnknownOperator(Unsupported):
    """An operator the importer has no converter for (and could not fold)."""


def convert_node(state: GraphState, node: OnnxNode, opset: int):
    """The Values of ``node``'s outputs: folded at import time, or built as
    tensor-op nodes by its converter; Unsupported when it cannot be."""
    if node.domain not in ("", "ai.onnx"):
        raise UnknownOperator(node.op_type)
    folded = fold(state, node, opset)
    if folded is not None:
        return folded
    if not known(node):
        raise UnknownOperator(node.op_type)
    if node.op_type in OPSET_CONVERTERS:
        return OPSET_CONVERTERS[node.op_type](state, node, opset)
    converter = TENSOR_CONVERTERS.get(node.op_type)
    if converter is None:
        raise Unsupported(f"{node.op_type} is supported only on constants and shapes",
                          "make its inputs initializers, or give the model fixed sizes")
    try:
        return converter(state, node)
    except Unsupported:
        raise
    except Exception as error:  # a tensor op rejecting its inputs
        raise Unsupported(_first_line(error), "") from error


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _input_type(info) -> BufferType:
    tensor = info.type.tensor_type
    element = ELEMENT_TYPES.get(tensor.elem_type)
    if element is None:
        raise Unsupported(f"element type {tensor.elem_type} is not supported",
                          "use bool, an integer type (int2 ... uint64) or a float type "
                          "(float4, float8 other than e8m0, float16, bfloat16, float, double)")
    dims = []
    for axis, dim in enumerate(tensor.shape.dim):
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        else:
            param = dim.dim_param or f"{info.name}_{axis}"
            dims.append(symbol_name(param))
    return BufferType(element, tuple(dims))


def _diagnostic(source, node: str, op_type: str | None, error: Unsupported) -> Diagnostic:
    what = f"{op_type} node '{node}'" if op_type else f"input '{node}'"
    return Diagnostic(Location(file=source, node=node), f"{what}: {error.message}", error.fix)


def _unsupported_summary(source, unsupported: dict[str, list[str]]) -> list[Diagnostic]:
    if not unsupported:
        return []
    parts = [f"{op} (node{'s' if len(nodes) > 1 else ''} {', '.join(repr(n) for n in nodes)})"
             for op, nodes in sorted(unsupported.items())]
    supported = ", ".join(sorted(KNOWN_OPS))
    return [Diagnostic(Location(file=source),
                       f"unsupported ONNX operators: {'; '.join(parts)}",
                       f"rewrite these with supported operators ({supported}), or run them "
                       "outside hpvm")]
