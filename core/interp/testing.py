"""Small builders for tests that run kernels on the interpreter.

    module = map_module({"a": F32, "b": F32}, F32, lambda a, b: a * b)
    out = run_map(module, a=np.ones(4, np.float32), b=...)    # elementwise

    module = kernel_module(function)   # one node running ``function``,
                                       # every parameter a graph parameter

    node = tensor_node("c", "conv2d", types_of(x=x, w=w), {"padding": 1})
    assert_lowering_matches(node, {"x": x, "w": w})   # lowering == evaluate
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from hpvm.errors import Location
from hpvm.ir.graph import BindIn, BindOut, Graph, KernelBody, Module, Node
from hpvm.ir.kernel import Expr, InstanceId, KernelFunction, Load, Store
from hpvm.ir.parameter import Parameter
from hpvm.ir.shapes import bind_symbols, replication_sizes
from hpvm.ir.tensor_ops import get_op
from hpvm.ir.tensor_ops.testing import evaluate_node, lowered_module
from hpvm.ir.types import BufferType, ScalarType

from .api import run_kernel

MAP_FUNCTION = "map"


def map_module(inputs: Mapping[str, ScalarType], out: ScalarType,
               compute: Callable[..., Expr]) -> Module:
    """A module whose kernel ``map`` sets ``out[i] = compute(in1[i], ...)``
    for buffers of length N, one instance per element."""
    i = InstanceId(0)
    params = tuple(Parameter(n, BufferType(t, ("N",))) for n, t in inputs.items())
    params += (Parameter("out", BufferType(out, ("N",)), "out"),)
    loads = {n: Load(n, (i,), t) for n, t in inputs.items()}
    body = (Store("out", (i,), compute(**loads)),)
    return Module("map", {MAP_FUNCTION: KernelFunction(MAP_FUNCTION, params, body)}, {}, "main")


def run_map(module: Module, **arrays: np.ndarray) -> np.ndarray:
    """Run a :func:`map_module` kernel on equally long arrays."""
    length = len(next(iter(arrays.values())))
    return run_kernel(module, MAP_FUNCTION, arrays, (length,))["out"]


def kernel_module(function: KernelFunction, replication: tuple[Expr, ...] = (),
                  helpers: tuple[KernelFunction, ...] = (), attributes=None) -> Module:
    """A module whose root graph ``main`` is one node ``k`` running
    ``function``; every kernel parameter is a graph parameter of the same
    name (private ones enter as ``in``)."""
    params = tuple(
        Parameter(p.name, p.type, "in" if p.direction == "private" else p.direction)
        for p in function.params)
    node = Node("k", KernelBody(function.name), tuple(replication),
                attributes=dict(attributes or {}))
    graph = Graph("main", params, (node,),
                  bind_ins=tuple(BindIn(p.name, "k", p.name) for p in params if p.reads),
                  bind_outs=tuple(BindOut("k", p.name, p.name) for p in params if p.writes))
    functions = {f.name: f for f in (function,) + tuple(helpers)}
    return Module(function.name, functions, {"main": graph}, "main")


def run_lowered(node: Node, inputs: Mapping[str, np.ndarray],
                tiles=None) -> dict[str, np.ndarray]:
    """Outputs of ``node``'s lowered kernel (register tiles ``tiles``) run
    on the interpreter, with the replication evaluated in the node's scope
    bound from ``inputs``."""
    module, name, replication = lowered_module(node, tiles)
    symbols = bind_symbols(node.body.params, inputs, Location(node=node.name))
    results = run_kernel(module, name, dict(inputs), replication_sizes(replication, symbols))
    outputs = get_op(node.body.op).outputs
    return {port: results[port] for port in outputs}


def assert_lowering_matches(node: Node, inputs: Mapping[str, np.ndarray],
                            rtol: float = 1e-5, atol: float = 1e-5, tiles=None) -> None:
    """Assert that ``node``'s lowered kernel (register tiles ``tiles``,
    interpreted) computes what ``evaluate`` does, port by port, within
    float tolerance."""
    expected = evaluate_node(node, inputs)
    actual = run_lowered(node, inputs, tiles)
    for port, value in expected.items():
        assert actual[port].shape == value.shape, port
        assert actual[port].dtype == value.dtype, port
        np.testing.assert_allclose(actual[port], value, rtol=rtol, atol=atol,
                                   err_msg=f"{node.body.op}: port '{port}'")
