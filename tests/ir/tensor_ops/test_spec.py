"""The tensor-op contract: registry, attribute handling, ports, tensor_node
and the lowering contract, shared by every op."""
import dataclasses

import numpy as np
import pytest

from hpvm.errors import ExecutionError, VerificationError
from hpvm.ir import F32, I32, I64, BufferType, Parameter, TensorBody, Var
from hpvm.ir.kernel import Const, For, Let
from hpvm.ir.tensor_ops import REQUIRED, TENSOR_OPS, get_op, tensor_node
from hpvm.ir.visit import walk

EXPECTED_OPS = {
    "conv2d", "matmul", "gemm", "add", "mul", "bias_add", "relu", "clipped_relu",
    "tanh", "sigmoid", "max_pool", "avg_pool", "softmax", "batchnorm", "reshape",
    "flatten", "concat", "elementwise", "prelu", "lrn", "slice", "transpose", "pad",
    "perforation_fill", "unary", "binary", "select", "cast", "reduce", "arg_reduce",
    "expand", "gather", "gather_elements", "cumsum", "bitcast", "scatter", "sort", "rowwise",
    "attention",
}


def f32(*shape):
    return BufferType(F32, shape)


def test_registry_holds_every_op_under_its_own_name():
    assert set(TENSOR_OPS) == EXPECTED_OPS
    assert all(spec.name == name for name, spec in TENSOR_OPS.items())


def test_get_op_lists_the_ops_when_the_name_is_unknown():
    with pytest.raises(VerificationError, match="unknown tensor op 'conv3d'.*conv2d"):
        get_op("conv3d")


def test_defaults_fill_in_missing_attributes():
    attrs = get_op("conv2d").resolve_attrs({"groups": 2})
    assert attrs == {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1),
                     "groups": 2, "activation": "none", "perforate_rows": (),
                     "perforate_cols": (), "sample_filter": ()}


def test_unknown_attribute_error_lists_the_allowed_ones():
    with pytest.raises(VerificationError) as info:
        get_op("relu").infer({"x": f32(4)}, {"alpha": 0.1})
    assert "unknown attribute 'alpha'" in str(info.value)
    with pytest.raises(VerificationError, match="allowed attributes: stride, padding, "
                                                "dilation, groups"):
        get_op("conv2d").infer({"x": f32(1, 1, 3, 3), "w": f32(1, 1, 1, 1)}, {"pad": 1})


def test_missing_required_attribute_is_reported():
    assert get_op("reshape").attrs["shape"] is REQUIRED
    with pytest.raises(VerificationError, match="attribute 'shape' is required"):
        get_op("reshape").infer({"x": f32(4)}, {})


def test_attribute_of_the_wrong_kind_names_the_attribute():
    with pytest.raises(VerificationError, match="attribute 'stride' must be a list of 2"):
        get_op("conv2d").infer({"x": f32(1, 1, 3, 3), "w": f32(1, 1, 1, 1)},
                               {"stride": (1, 1, 1)})
    with pytest.raises(VerificationError, match="'epsilon' must be a number"):
        get_op("batchnorm").infer({p: f32(2) for p in ("scale", "bias", "mean", "var")}
                                  | {"x": f32(1, 2)}, {"epsilon": "small"})


def test_a_single_int_stands_for_a_pair():
    spec = get_op("max_pool")
    assert spec.infer({"x": f32(1, 1, 4, 4)}, {"kernel": 2, "stride": 2})["y"] == f32(1, 1, 2, 2)


def test_lists_are_accepted_as_tuples():
    spec = get_op("conv2d")
    out = spec.infer({"x": f32(1, 1, 3, 3), "w": f32(1, 1, 3, 3)}, {"padding": [1, 1, 1, 1]})
    assert out["y"] == f32(1, 1, 3, 3)


def test_missing_input_is_reported_with_its_port():
    with pytest.raises(VerificationError) as info:
        get_op("matmul").infer({"a": f32(2, 2)})
    assert info.value.diagnostics[0].location.port == "b"


def test_unknown_input_port_is_reported():
    with pytest.raises(VerificationError, match="no input port 'z'.*a, b"):
        get_op("add").infer({"a": f32(2), "b": f32(2), "z": f32(2)})


def test_unshaped_input_is_rejected():
    with pytest.raises(VerificationError, match="buffer with a shape"):
        get_op("relu").infer({"x": BufferType(F32)})


def test_mixed_element_types_are_rejected():
    with pytest.raises(VerificationError, match="'b' has element type i32 but 'a' has f32"):
        get_op("add").infer({"a": f32(2), "b": BufferType(I32, (2,))})


def test_float_only_ops_reject_integers():
    with pytest.raises(VerificationError, match="needs float inputs"):
        get_op("tanh").infer({"x": BufferType(I32, (2,))})


def test_errors_name_the_node():
    with pytest.raises(VerificationError) as info:
        get_op("matmul").infer({"a": f32(2, 3), "b": f32(4, 5)}, node="fc1")
    assert info.value.diagnostics[0].location.node == "fc1"
    assert str(info.value).startswith("node 'fc1'")


def test_variadic_ports_are_numbered_without_gaps():
    spec = get_op("concat")
    assert spec.variadic and spec.inputs == ("x0",)
    assert spec.is_input_port("x12") and not spec.is_input_port("x01")
    with pytest.raises(VerificationError, match="numbered x0 to x1 without gaps"):
        spec.infer({"x0": f32(2), "x2": f32(2)}, {"axis": 0})


def test_tensor_node_declares_inputs_then_inferred_outputs():
    node = tensor_node("fc", "gemm", {"c": f32(8), "a": f32("N", 4), "b": f32(4, 8)},
                       {"alpha": 2}, hint="cpu")
    body = node.body
    assert isinstance(body, TensorBody) and body.op == "gemm"
    assert body.params == (Parameter("a", f32("N", 4)), Parameter("b", f32(4, 8)),
                           Parameter("c", f32(8)), Parameter("y", f32("N", 8), "out"))
    assert body.attrs == {"alpha": 2} and node.hint == "cpu"
    assert node.replication == ()


def test_tensor_node_stores_lists_as_tuples():
    node = tensor_node("p", "max_pool", {"x": f32(1, 1, 4, 4)}, {"kernel": [2, 2]})
    assert node.body.attrs == {"kernel": (2, 2)}


def test_evaluate_reports_bad_arrays_as_execution_errors():
    with pytest.raises(ExecutionError, match="rows of 'b'"):
        get_op("matmul").evaluate({"a": np.ones((2, 3), np.float32),
                                   "b": np.ones((4, 2), np.float32)})


def test_lowered_kernel_keeps_the_node_params_and_is_named_after_node_and_op():
    """Inputs become ``restrict``: a result is never in an input's buffer."""
    node = tensor_node("act", "relu", {"x": f32("N", 16)})
    function, replication = get_op("relu").lower("act", node.body)
    assert function.name == "act_relu"
    assert function.params == tuple(dataclasses.replace(p, restrict=p.direction == "in")
                                     for p in node.body.params)
    assert replication == (Var("N", I64) * Const(16, I64),)


def test_replication_is_constant_for_concrete_shapes():
    node = tensor_node("act", "sigmoid", {"x": f32(3, 5)})
    _, replication = get_op("sigmoid").lower("act", node.body)
    assert replication == (Const(15, I64),)


def test_lowered_kernel_reads_only_ports_and_shape_symbols():
    node = tensor_node("c", "conv2d", {"x": f32("N", 3, "H", "W"), "w": f32(4, 3, 3, 3)},
                       {"padding": (1, 1, 1, 1)})
    function, _ = get_op("conv2d").lower("c", node.body)
    declared = {s.name for s in walk(function.body) if isinstance(s, Let)}
    declared |= {s.var for s in walk(function.body) if isinstance(s, For)}
    read = {e.name for e in walk(function.body) if isinstance(e, Var)}
    assert read - declared == {"H", "W"}


def test_lowering_rejects_a_wrongly_declared_output():
    node = tensor_node("act", "relu", {"x": f32(4)})
    body = TensorBody("relu", (node.body.params[0], Parameter("y", f32(5), "out")))
    with pytest.raises(VerificationError, match="declared f32\\[5\\] but the op makes f32\\[4\\]"):
        get_op("relu").lower("act", body)


def test_lowering_rejects_a_body_of_another_op():
    node = tensor_node("act", "relu", {"x": f32(4)})
    with pytest.raises(VerificationError, match="cannot lower a 'relu' node"):
        get_op("tanh").lower("act", node.body)


def test_local_names_avoid_shape_symbols():
    node = tensor_node("s", "softmax", {"x": f32("i", "base")})
    function, _ = get_op("softmax").lower("s", node.body)
    declared = [s.name for s in walk(function.body) if isinstance(s, Let)]
    assert "i" not in declared and "base" not in declared
