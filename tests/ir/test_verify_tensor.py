"""Tensor-op nodes in the verifier (hpvm.ir.verify): the op, its ports and
attributes, and the declared output types against shape inference.

Most tests run against two stub ops that follow the agreed TensorOpSpec
interface, so they do not depend on the real registry; the last ones check
real ops (and their reference lowerings) verify clean.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Const, Graph, KernelBody, Module, Node,
    Parameter, TensorBody,
)
from hpvm.ir import verify_tensor
from hpvm.ir.verify import check


@dataclass(frozen=True)
class StubOp:
    """The agreed TensorOpSpec interface, enough for the verifier."""

    name: str
    inputs: tuple[str, ...]
    optional_inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ("Y",)
    attrs: dict = field(default_factory=dict)

    def infer(self, input_types, attrs):
        if self.name == "relu":
            return {"Y": input_types["X"]}
        a, b = input_types["A"], input_types["B"]
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"inner dims {a.shape[1]} and {b.shape[0]} differ")
        return {"Y": BufferType(a.element, (a.shape[0], b.shape[1]))}


@pytest.fixture
def stub_ops(monkeypatch):
    """The verifier's registry of tensor ops replaced by two stub ops."""
    stubs = {
        "relu": StubOp("relu", ("X",), attrs={"alpha": 0.0}),
        "matmul": StubOp("matmul", ("A", "B"), ("bias",)),
    }
    monkeypatch.setattr(verify_tensor, "TENSOR_OPS", stubs)
    return stubs


def single_node_module(node: Node, functions=()) -> Module:
    """A root graph running ``node``; its ports are graph parameters."""
    params = node.body.params if isinstance(node.body, TensorBody) else \
        functions[0].params
    bind_ins = tuple(BindIn(p.name, node.name, p.name) for p in params if p.reads)
    bind_outs = tuple(BindOut(node.name, p.name, p.name) for p in params if p.writes)
    graph = Graph("main", tuple(params), (node,), (), bind_ins, bind_outs)
    return Module("tensor", {f.name: f for f in functions}, {"main": graph}, "main")


def tensor_module(op: str, params, attrs=None) -> Module:
    return single_node_module(Node("t", TensorBody(op, tuple(params), attrs or {})))


def relu_params(x=BufferType(F32, ("N", 8)), y=BufferType(F32, ("N", 8))):
    return (Parameter("X", x), Parameter("Y", y, "out"))


def matmul_params(a=(4, 3), b=(3, 5), y=(4, 5)):
    return (Parameter("A", BufferType(F32, a)), Parameter("B", BufferType(F32, b)),
            Parameter("Y", BufferType(F32, y), "out"))


def find(module: Module, *fragments: str):
    """The diagnostics whose text contains every fragment (at least one)."""
    diagnostics = check(module)
    found = [d for d in diagnostics if all(f in str(d) for f in fragments)]
    assert found, f"no diagnostic with {fragments}; got:\n" + "\n".join(
        str(d) for d in diagnostics)
    return found


# -- against the stub ops --------------------------------------------------------
def test_well_formed_tensor_nodes_verify(stub_ops):
    assert check(tensor_module("relu", relu_params(), {"alpha": 0.1})) == []
    assert check(tensor_module("matmul", matmul_params())) == []


def test_unknown_tensor_op_lists_known_ops(stub_ops):
    find(tensor_module("frobnicate", relu_params()),
         "node 't' uses unknown tensor op 'frobnicate'", "'matmul', 'relu'")


def test_tensor_op_missing_required_input(stub_ops):
    (diagnostic,) = find(tensor_module("matmul", matmul_params()[1:]),
                         "tensor op 'matmul' of node 't' needs input 'A'")
    assert diagnostic.location.port == "A"


def test_tensor_op_missing_output_port(stub_ops):
    find(tensor_module("relu", relu_params()[:1]), "produces 'Y' but has no port")


def test_tensor_op_unknown_port(stub_ops):
    params = relu_params() + (Parameter("Z", BufferType(F32, ("N", 8))),)
    find(tensor_module("relu", params), "tensor op 'relu' has no port 'Z'")


def test_tensor_op_port_with_wrong_direction(stub_ops):
    params = (Parameter("X", BufferType(F32, ("N", 8)), "inout"),
              Parameter("Y", BufferType(F32, ("N", 8)), "out"))
    find(tensor_module("relu", params), "port 'X' of tensor op 'relu' must be 'in'")


def test_tensor_op_unshaped_port(stub_ops):
    find(tensor_module("relu", relu_params(x=BufferType(F32))),
         "port 'X' of tensor op 'relu' is f32[*]")


def test_tensor_op_output_type_inconsistent_with_inference(stub_ops):
    find(tensor_module("matmul", matmul_params(y=(4, 6))),
         "output 'Y' of 'matmul' is declared f32[4, 6]", "infers f32[4, 5]")


def test_tensor_op_rejecting_its_input_types(stub_ops):
    find(tensor_module("matmul", matmul_params(b=(2, 5))),
         "tensor op 'matmul' rejects its inputs: inner dims 3 and 2 differ")


def test_tensor_op_unknown_attribute(stub_ops):
    find(tensor_module("relu", relu_params(), {"beta": 1.0}),
         "tensor op 'relu' has no attribute 'beta'", "'alpha'")


def test_tensor_attribute_of_unsupported_type(stub_ops):
    find(tensor_module("relu", relu_params(), {"alpha": np.float16(1)}),
         "op 'relu' attribute 'alpha' has unsupported value")


def test_tensor_node_must_not_be_replicated(stub_ops):
    node = Node("t", TensorBody("relu", relu_params()), (Const(1, I64),))
    find(single_node_module(node), "node 't' is replicated but is not a kernel")


# -- against the real registry ---------------------------------------------------
F = F32
REAL_CASES = [
    ("conv2d", {"x": (F, ("N", 3, 8, 8)), "w": (F, (4, 3, 3, 3)), "b": (F, (4,))},
     {"padding": (1, 1, 1, 1)}),
    ("matmul", {"a": (F, ("M", "K")), "b": (F, ("K", 5))}, {}),
    ("gemm", {"a": (F, (4, 3)), "b": (F, (3, 5)), "c": (F, (5,))}, {"alpha": 2.0}),
    ("bias_add", {"x": (F, ("N", 4, 2, 2)), "b": (F, (4,))}, {}),
    ("max_pool", {"x": (F, ("N", 2, 8, 8))}, {"kernel": (2, 2), "stride": (2, 2)}),
    ("softmax", {"x": (F, ("N", 10))}, {}),
    ("batchnorm", {"x": (F, ("N", 3, 4, 4)), **{k: (F, (3,)) for k in (
        "scale", "bias", "mean", "var")}}, {}),
    ("reshape", {"x": (F, (2, 3, 4))}, {"shape": (6, 4)}),
    ("flatten", {"x": (F, ("N", 3, 4, 4))}, {}),
    ("concat", {"x0": (F, ("N", 3)), "x1": (F, ("N", 2))}, {}),
]


def real_registry():
    tensor_ops = pytest.importorskip("hpvm.ir.tensor_ops")
    if not hasattr(tensor_ops, "tensor_node"):
        pytest.skip("hpvm.ir.tensor_ops is not complete yet")
    return tensor_ops


def real_node(op, inputs, attrs):
    registry = real_registry()
    types_ = {port: BufferType(*t) for port, t in inputs.items()}
    return registry, registry.tensor_node("t", op, types_, attrs)


@pytest.mark.parametrize("op, inputs, attrs", REAL_CASES, ids=[c[0] for c in REAL_CASES])
def test_real_tensor_node_verifies_clean(op, inputs, attrs):
    _, node = real_node(op, inputs, attrs)
    assert check(single_node_module(node)) == []


@pytest.mark.parametrize("op, inputs, attrs", REAL_CASES, ids=[c[0] for c in REAL_CASES])
def test_real_tensor_lowering_verifies_clean(op, inputs, attrs):
    registry, node = real_node(op, inputs, attrs)
    function, replication = registry.get_op(op).lower("t", node.body)
    kernel_node = Node("t", KernelBody(function.name), replication)
    assert check(single_node_module(kernel_node, (function,))) == []


def test_real_op_missing_required_attribute():
    registry, node = real_node("max_pool", {"x": (F, ("N", 2, 8, 8))}, {"kernel": 2})
    body = TensorBody("max_pool", node.body.params, {})
    find(single_node_module(Node("t", body)), "rejects its inputs", "'kernel'")


def test_real_op_unknown_lists_known_ops():
    registry = real_registry()
    find(tensor_module("frobnicate", relu_params()), "unknown tensor op",
         f"'{sorted(registry.TENSOR_OPS)[0]}'")
