"""Checks of one node on its own: what its body refers to, its replication,
its attributes, and the rules of constant and tensor-op bodies.

``check_node(module, node, report)`` returns the node's ports by name (None
when its body cannot be resolved), for the graph checks of edges.
"""
from __future__ import annotations

import numpy as np

from .graph import (
    MAX_REPLICATION_DIMS, PADDED_GROUPS, ConstantBody, Graph, GraphBody, KernelBody, Node,
    TensorBody,
)
from .kernel import KernelFunction
from .parameter import Parameter
from .tensor_ops.int8 import int8_problem
from .tensor_ops.precision import PRECISION_ATTRIBUTE, PRECISIONS, PRODUCT_OPS
from .types import BufferType
from .verify_common import (
    Report, check_out_shapes, check_param_list, node_scope, quoted,
)
from .verify_expr import ExprChecker
from .verify_kernel import instance_dims_used
from .verify_tensor import check_tensor_node

ATTRIBUTE_SCALARS = (bool, int, float, str)


def check_node(module, node: Node, report: Report) -> dict[str, Parameter] | None:
    """Check ``node`` (``report`` already names its graph and node)."""
    params = _body_params(module, node, report)
    if params is not None:
        _check_replication(module, node, params, report)
    _check_attributes(node.attributes, report, "attribute")
    _check_group(node, report)
    _check_precision(node, report)
    if node.hint is not None and not isinstance(node.hint, str):
        report.error(f"hint {node.hint!r} is not a target name",
                     "use a target name such as 'cpu', or None")
    return None if params is None else {p.name: p for p in params}


def _body_params(module, node: Node, report: Report):
    """The node's ports, after checking what its body refers to."""
    body = node.body
    if isinstance(body, KernelBody):
        return _kernel_params(module, node, report)
    if isinstance(body, GraphBody):
        if not isinstance(module.graphs.get(body.graph), Graph):
            report.error(f"node '{node.name}' contains unknown graph "
                         f"'@{body.graph}'", f"define graph '@{body.graph}' "
                         f"or use one of {quoted(module.graphs)}")
            return None
        return module.graphs[body.graph].params
    if isinstance(body, TensorBody):
        check_param_list(body.params, report, f"node '{node.name}'")
        _check_attributes(body.attrs, report, f"op '{body.op}' attribute")
        check_tensor_node(node, report)
        return body.params
    if isinstance(body, ConstantBody):
        _check_constant(node, report)
        return body.params
    report.error(f"node '{node.name}' has an unknown body {body!r}",
                 "use KernelBody, TensorBody, ConstantBody or GraphBody")
    return None


def _kernel_params(module, node: Node, report: Report):
    name = node.body.function
    function = module.functions.get(name)
    if not isinstance(function, KernelFunction):
        report.error(f"node '{node.name}' runs unknown function '@{name}'",
                     f"define '@{name}' in the module or use one of "
                     f"{quoted(module.functions)}")
        return None
    used = instance_dims_used(module, name)
    rank = max(1, len(node.replication))
    if used > rank:
        report.error(
            f"node '{node.name}' runs '@{name}', which reads InstanceId/"
            f"InstanceCount of dim {used - 1}, but the node is replicated in "
            f"{rank} dim(s)", f"replicate the node in {used} dims or use only "
            f"dims below {rank} in the kernel", function=name)
    return function.params


def check_node_kernel(function: KernelFunction, report: Report) -> None:
    """Rules for a function that a node runs (not a helper)."""
    if function.return_type is not None:
        report.error(
            f"node kernel '@{function.name}' returns a value (return type "
            f"{function.return_type}); kernels a node runs return nothing",
            "write the result into an out buffer parameter and drop the "
            "return type")
    check_out_shapes(function.params, report, f"kernel '@{function.name}'")


# -- replication ---------------------------------------------------------
class ReplicationChecker(ExprChecker):
    """Types replication expressions in the node's scope: shape symbols of
    its buffer ports and its integer scalar in ports, nothing else."""

    def __init__(self, module, node: Node, params, report: Report):
        scope = node_scope(params)
        names = tuple(Parameter(n, t) for n, t in scope.items())
        super().__init__(module, KernelFunction(node.name, names, ()), report)
        self.node = node

    def _type_Var(self, expr):
        if self.lookup(expr.name) is None:
            self.report.error(
                f"replication of node '{self.node.name}' uses '{expr.name}', "
                "which is not in the node's scope",
                f"use shape symbols of its buffer ports or its integer scalar "
                f"in ports: {quoted(self.scopes[0])}")
            return None
        return super()._type_Var(expr)

    def _not_allowed(self, expr):
        self.report.error(
            f"replication of node '{self.node.name}' uses "
            f"{type(expr).__name__}; only constants, the node's symbols and "
            "arithmetic on them are allowed", "compute the size from shape "
            "symbols and integer scalar ports")
        return None

    _type_Load = _type_Call = _not_allowed
    _type_InstanceId = _type_InstanceCount = _not_allowed


def _check_replication(module, node: Node, params, report: Report) -> None:
    replication = node.replication
    if not replication:
        return
    if not isinstance(node.body, KernelBody):
        report.error(f"node '{node.name}' is replicated but is not a kernel "
                     "node", "replicate kernel nodes only; remove the "
                     "replication here")
        return
    if len(replication) > MAX_REPLICATION_DIMS:
        report.error(
            f"node '{node.name}' is replicated in {len(replication)} dims; "
            f"at most {MAX_REPLICATION_DIMS} are allowed",
            "merge dimensions or loop inside the kernel")
    checker = ReplicationChecker(module, node, params, report)
    for dim, expr in enumerate(replication):
        t = checker.scalar_type(expr, f"replication dim {dim}")
        if t is not None and not t.is_int:
            report.error(f"replication dim {dim} of node '{node.name}' has "
                         f"type {t}; it must be an integer",
                         "cast it: Cast(size, i64)")


# -- attributes ----------------------------------------------------------
def _is_attribute_value(value) -> bool:
    if isinstance(value, tuple):
        return all(_is_attribute_value(v) for v in value)
    return isinstance(value, ATTRIBUTE_SCALARS)


def _check_attributes(attributes, report: Report, what: str) -> None:
    if not isinstance(attributes, dict):
        report.error(f"{what}s must be a dict, got {attributes!r}",
                     "use a dict of name -> value")
        return
    for key, value in attributes.items():
        if not isinstance(key, str):
            report.error(f"{what} name {key!r} is not a string",
                         "name attributes with strings")
        elif not _is_attribute_value(value):
            report.error(
                f"{what} '{key}' has unsupported value {value!r} "
                f"({type(value).__name__})", "use bool, int, float, str or "
                "a (nested) tuple of them; convert numpy values with "
                ".item() and lists with tuple()")


def _check_group(node: Node, report: Report) -> None:
    attributes = node.attributes if isinstance(node.attributes, dict) else {}
    group, padded = attributes.get("group"), attributes.get(PADDED_GROUPS)
    if padded is not None and (not isinstance(padded, bool) or group is None):
        report.error(f"attribute '{PADDED_GROUPS}' {padded!r} must be true or false, on a "
                     "node with a 'group'", f"give the node a 'group', or drop '{PADDED_GROUPS}'")
    if group is None:
        return
    dims = max(1, len(node.replication))
    if (not isinstance(group, tuple) or len(group) != dims or any(
            not isinstance(g, int) or isinstance(g, bool) or g < 1 for g in group)):
        report.error(f"attribute 'group' {group!r} must be a tuple of {dims} "
                     "positive ints (one per replication dim)",
                     "give one work-group size per replication dim")


def _check_precision(node: Node, report: Report) -> None:
    value = node.attributes.get(PRECISION_ATTRIBUTE) if isinstance(node.attributes, dict) else None
    if value is None:
        return
    if value not in PRECISIONS:
        report.error(f"attribute precision={value!r} is not supported",
                     f"use one of: {', '.join(PRECISIONS)}")
    elif not isinstance(node.body, TensorBody) and value != "fp32":
        report.error(f"attribute precision={value!r} is only for tensor-op nodes",
                     "remove it, or lower precision inside the kernel itself")
    elif value == "tf32" and node.body.op not in PRODUCT_OPS:
        report.error(f"attribute precision='tf32' does not fit a {node.body.op}",
                     f"use it on {', '.join(PRODUCT_OPS)} nodes, or use fp16 here")
    elif value == "int8":
        problem = int8_problem(node)
        if problem:
            report.error(f"attribute precision='int8' does not fit: {problem[0]}", problem[1])


# -- constants --------------------------------------------
def _check_constant(node: Node, report: Report) -> None:
    body = node.body
    where = f"constant node '{node.name}'"
    if not isinstance(body.type, BufferType):
        report.error(f"{where} has type {body.type!r}; constants are buffers",
                     "give it a BufferType")
        return
    if not isinstance(body.data, np.ndarray):
        report.error(f"{where} holds {type(body.data).__name__}, not a numpy "
                     "array", "wrap the data with np.asarray")
        return
    expected = body.type.element.numpy_dtype
    if body.data.dtype != expected:
        report.error(f"{where} has data of dtype {body.data.dtype} but its "
                     f"type {body.type} needs {expected}",
                     f"convert the data: data.astype(np.{expected})")
    shape = body.type.shape
    if shape is None:
        return
    if body.type.symbols:
        report.error(f"{where} has type {body.type} with shape symbols; "
                     "constants need fixed dims",
                     f"use the data's shape {body.data.shape}")
    elif tuple(shape) != body.data.shape:
        report.error(f"{where} has data of shape {body.data.shape} but its "
                     f"type is {body.type}", "make the type's shape match "
                     "the data, or reshape the data")
