"""The operators ONNX defines beyond CNNs, in small graphs written here the
way exporters write them, on interp, cpu and gpu_opencl (where an OpenCL
device is) against onnxruntime: the pointwise math, reductions,
normalisations, indexing and Attention."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.runtime import compile
from hpvm.testing import usable_targets

ort = pytest.importorskip("onnxruntime")
RNG = np.random.default_rng(11)
TARGETS = ("interp", "cpu") + tuple(usable_targets(("gpu_opencl",)))


def model(nodes, inputs, outputs, initializers=(), opset=17):
    """A model whose outputs get the types onnx's shape inference gives."""
    graph = helper.make_graph(nodes, "breadth", inputs, [], list(initializers))
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8 if opset <= 17 else 10)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(made).graph.value_info}
    made.graph.output.extend(inferred[o.name] for o in outputs)
    return made


def info(name, array_or_shape, element=TensorProto.FLOAT):
    shape = getattr(array_or_shape, "shape", array_or_shape)
    if hasattr(array_or_shape, "dtype"):
        element = helper.np_dtype_to_tensor_dtype(array_or_shape.dtype)
    return helper.make_tensor_value_info(name, element, shape)


def check(onnx_model, inputs: dict, rtol=1e-4, atol=1e-5, reference=False):
    """hpvm on TARGETS against onnxruntime (``reference``: onnx's
    reference implementation, for operators newer than onnxruntime)."""
    if reference:
        from onnx.reference import ReferenceEvaluator
        expected = ReferenceEvaluator(onnx_model).run(None, inputs)
    else:
        session = ort.InferenceSession(onnx_model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        expected = session.run(None, inputs)
    module = load(onnx_model)
    for target in TARGETS:
        exe = compile(module, [target])
        outputs = exe(**inputs)
        got = [outputs[p.name] for p in module.root_graph.params if p.direction == "out"]
        for index, (value, want) in enumerate(zip(got, expected)):
            assert value.dtype == want.dtype, (target, index)
            np.testing.assert_allclose(value, want, rtol=rtol, atol=atol,
                                       err_msg=f"{target}: output {index}")


def one_node(op, inputs: dict, outputs=("y",), opset=17, **attrs):
    node = helper.make_node(op, list(inputs), list(outputs), **attrs)
    return model([node], [info(n, a) for n, a in inputs.items()],
                 [helper.make_tensor_value_info(o, 0, None) for o in outputs], opset=opset)


X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("op,attrs", [
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Elu", {"alpha": 0.7}), ("Selu", {}),
    ("Celu", {"alpha": 1.5}), ("LeakyRelu", {"alpha": 0.1}), ("HardSigmoid", {}),
    ("HardSwish", {}), ("Softplus", {}), ("Softsign", {}), ("Mish", {}), ("Erf", {}),
    ("Exp", {}), ("Neg", {}), ("Abs", {}), ("Sign", {}), ("Round", {}), ("Floor", {}),
    ("Atan", {}), ("Tanh", {}), ("ThresholdedRelu", {"alpha": 0.3}),
    ("Shrink", {"lambd": 0.4, "bias": 0.1}),
])
def test_activations_and_math(op, attrs):
    opset = 20 if op == "Gelu" else 18
    check(one_node(op, {"x": X}, opset=opset, **attrs), {"x": X})


@pytest.mark.parametrize("op", ["Div", "Sub", "Pow", "Max", "Min", "Equal", "Less",
                                "GreaterOrEqual"])
def test_broadcasting_binary_operators(op):
    a, b = np.abs(X) + 0.5, (np.abs(RNG.standard_normal((3, 1))) + 0.5).astype(np.float32)
    check(one_node(op, {"a": a, "b": b}), {"a": a, "b": b})


def test_integer_division_modulo_and_where():
    a = RNG.integers(-20, 20, (3, 4)).astype(np.int64)
    b = np.array([3, -4, 5, 7], np.int64)
    nodes = [helper.make_node("Div", ["a", "b"], ["q"]),
             helper.make_node("Mod", ["a", "b"], ["r"]),
             helper.make_node("Greater", ["a", "b"], ["g"]),
             helper.make_node("Where", ["g", "q", "r"], ["y"])]
    outputs = [helper.make_tensor_value_info(n, 0, None) for n in ("q", "r", "y")]
    check(model(nodes, [info("a", a), info("b", b)], outputs), {"a": a, "b": b})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2",
                                "ReduceLogSumExp", "ReduceSumSquare", "ReduceProd"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_with_axes_as_an_input(op, keepdims):
    axes = numpy_helper.from_array(np.array([0, -1], np.int64), "axes")
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    check(model([node], [info("x", X)], [helper.make_tensor_value_info("y", 0, None)],
                [axes], opset=18), {"x": X})


def test_arg_max_and_log_softmax():
    nodes = [helper.make_node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
             helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)]
    outputs = [helper.make_tensor_value_info(n, 0, None) for n in ("i", "y")]
    check(model(nodes, [info("x", X)], outputs), {"x": X})


def test_layer_normalization_with_its_statistics():
    scale, bias = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(
        np.float32)
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv"],
                            axis=-1, epsilon=1e-5)
    outputs = [helper.make_tensor_value_info(n, 0, None) for n in ("y", "mean", "inv")]
    inits = [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")]
    check(model([node], [info("x", X)], outputs, inits), {"x": X})


def test_gather_expand_tile_trilu_cumsum_and_unsqueeze():
    table = RNG.standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[1, 9, -1], [0, 2, 2]], np.int64)
    consts = {"shape": np.array([2, 3, 4], np.int64), "reps": np.array([1, 2, 1], np.int64),
              "axis": np.array(2, np.int64), "axes": np.array([1], np.int64)}
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"]),
             helper.make_node("Expand", ["e", "shape"], ["x"]),
             helper.make_node("Tile", ["x", "reps"], ["t"]),
             helper.make_node("Trilu", ["t"], ["u"], upper=0),
             helper.make_node("CumSum", ["u", "axis"], ["c"], reverse=1),
             helper.make_node("Unsqueeze", ["c", "axes"], ["y"])]
    check(model(nodes, [info("table", table), info("ids", ids)],
                [helper.make_tensor_value_info("y", 0, None)],
                [numpy_helper.from_array(v, k) for k, v in consts.items()]),
          {"table": table, "ids": ids})


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_with_grouped_heads_a_mask_and_a_cache(causal):
    q = RNG.standard_normal((2, 4, 3, 8)).astype(np.float32)
    k, v = (RNG.standard_normal((2, 2, 5, 8)).astype(np.float32) for _ in range(2))
    past_k, past_v = (RNG.standard_normal((2, 2, 2, 8)).astype(np.float32) for _ in range(2))
    mask = RNG.random((3, 7)) < 0.8
    inputs = {"q": q, "k": k, "v": v, "mask": mask, "past_k": past_k, "past_v": past_v}
    node = helper.make_node("Attention", list(inputs), ["y", "present_k", "present_v"],
                            is_causal=causal)
    outputs = [helper.make_tensor_value_info(n, 0, None) for n in ("y", "present_k",
                                                                   "present_v")]
    onnx_model = model([node], [info(n, a) for n, a in inputs.items()], outputs, opset=23)
    from onnx.reference import ReferenceEvaluator  # onnxruntime may lack opset 23
    expected = ReferenceEvaluator(onnx_model).run(None, inputs)
    module = load(onnx_model)
    for target in TARGETS:
        result = compile(module, [target])(**inputs)
        got = [result[p.name] for p in module.root_graph.params if p.direction == "out"]
        for value, want in zip(got, expected):
            np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5, err_msg=target)


@pytest.mark.parametrize("equation,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("abcd,ecd->abe", [(2, 3, 4, 5), (6, 4, 5)]),      # Keras's attention output
    ("aecd,abcd->acbe", [(2, 5, 3, 4), (2, 6, 3, 4)]),  # Keras's attention scores
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ijk->i", [(3, 4, 5)]),
])
def test_einsum(equation, shapes):
    operands = {f"x{i}": RNG.standard_normal(s).astype(np.float32)
                for i, s in enumerate(shapes)}
    check(one_node("Einsum", operands, equation=equation), operands)


@pytest.mark.parametrize("mode,transform", [
    ("nearest", "asymmetric"), ("linear", "half_pixel"), ("linear", "align_corners"),
    ("cubic", "pytorch_half_pixel"),
])
def test_resize_by_scales(mode, transform):
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    scales = numpy_helper.from_array(np.array([1, 1, 2.0, 1.6], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                            coordinate_transformation_mode=transform)
    check(model([node], [info("x", x)], [helper.make_tensor_value_info("y", 0, None)],
                [scales], opset=18), {"x": x})


def test_one_dimensional_convolution_and_pooling():
    x = RNG.standard_normal((2, 3, 10)).astype(np.float32)
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1], strides=[2]),
             helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2])]
    check(model(nodes, [info("x", x)], [helper.make_tensor_value_info("y", 0, None)], [w]),
          {"x": x})


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_with_weights_and_an_ignored_class(reduction):
    scores = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    labels = np.array([[0, 4, 2], [1, 1, 3], [2, 0, 0], [4, 3, 1]], np.int64)
    weights = numpy_helper.from_array(RNG.random(5).astype(np.float32) + 0.5, "weights")
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels", "weights"],
                            ["loss"], reduction=reduction, ignore_index=1)
    check(model([node], [info("scores", scores), info("labels", labels)],
                [helper.make_tensor_value_info("loss", 0, None)], [weights]),
          {"scores": scores, "labels": labels})


def test_quantize_dequantize_per_axis_and_in_blocks():
    x = (RNG.standard_normal((3, 8)) * 40).astype(np.float32)
    scale = RNG.random((3,)).astype(np.float32) + 0.5
    point = np.array([0, 10, -20], np.int8)
    q = one_node("QuantizeLinear", {"x": x, "scale": scale, "point": point}, axis=0, opset=21)
    check(q, {"x": x, "scale": scale, "point": point})
    blocks = RNG.random((3, 2)).astype(np.float32) + 0.5
    d = one_node("DequantizeLinear", {"x": np.int8([[1, -5] * 4] * 3), "scale": blocks},
                 axis=1, block_size=4, opset=21)
    check(d, {"x": np.int8([[1, -5] * 4] * 3), "scale": blocks})


def test_dynamic_quantization_and_quantized_products():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    check(one_node("DynamicQuantizeLinear", {"x": x}, outputs=("y", "scale", "point"),
                   opset=11), {"x": x})
    a = RNG.integers(0, 255, (3, 5)).astype(np.uint8)
    b = RNG.integers(0, 255, (5, 4)).astype(np.uint8)
    points = {"a_point": np.array(12, np.uint8), "b_point": np.array(130, np.uint8)}
    check(one_node("MatMulInteger", {"a": a, "b": b, **points}, opset=10),
          {"a": a, "b": b, **points})
    scales = {name: np.array(value, np.float32) for name, value in
              (("a_scale", 0.02), ("b_scale", 0.03), ("y_scale", 0.4))}
    inputs = {"a": a, "a_scale": scales["a_scale"], "a_point": points["a_point"], "b": b,
              "b_scale": scales["b_scale"], "b_point": points["b_point"],
              "y_scale": scales["y_scale"], "y_point": np.array(100, np.uint8)}
    check(one_node("QLinearMatMul", inputs, opset=10), inputs)


def test_bitcast_cumprod_and_lp_normalization():
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    check(one_node("BitCast", {"x": x}, opset=26, to=TensorProto.INT32), {"x": x})
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=1, reverse=1)
    check(model([node], [info("x", x)], [helper.make_tensor_value_info("y", 0, None)],
                [numpy_helper.from_array(np.array(1, np.int64), "axis")], opset=26), {"x": x})
    check(one_node("LpNormalization", {"x": x}, axis=0, p=2), {"x": x})


def test_one_hot_eye_like_and_gather_nd():
    indices = np.array([[1, -1], [3, 0]], np.int64)
    depth, values = np.array(4, np.int64), np.array([-2.0, 5.0], np.float32)
    graph = model([helper.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=1)],
                  [info("i", indices), info("values", values)],
                  [helper.make_tensor_value_info("y", 0, None)],
                  [numpy_helper.from_array(depth, "depth")])
    check(graph, {"i": indices, "values": values})
    check(one_node("EyeLike", {"x": np.zeros((3, 5), np.float32)}, k=1),
          {"x": np.zeros((3, 5), np.float32)})
    data = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    where = np.array([[[1, 2]], [[0, -1]]], np.int64)
    check(one_node("GatherND", {"data": data, "where": where}, batch_dims=1),
          {"data": data, "where": where})


@pytest.mark.parametrize("op,mode", [("SpaceToDepth", None), ("DepthToSpace", "DCR"),
                                     ("DepthToSpace", "CRD")])
def test_space_and_depth(op, mode):
    x = RNG.standard_normal((2, 8, 4, 6)).astype(np.float32)
    attrs = {"blocksize": 2, **({"mode": mode} if mode else {})}
    check(one_node(op, {"x": x}, **attrs), {"x": x})


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2]}, {"strides": [3, 2], "pads": [1, 0, 2, 1], "output_padding": [1, 0]},
    {"group": 2, "dilations": [2, 1]}, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 1], "output_shape": [10, 6]}])
def test_transposed_convolution(attrs):
    x = RNG.standard_normal((1, 4, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = RNG.standard_normal((3 * attrs.get("group", 1),)).astype(np.float32)
    check(one_node("ConvTranspose", {"x": x, "w": w, "b": b}, **attrs),
          {"x": x, "w": w, "b": b}, rtol=1e-3)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"ceil_mode": 1, "strides": [2, 2]}),
    ("AveragePool", {"ceil_mode": 1, "strides": [2, 2], "pads": [1, 1, 0, 0]}),
    ("LpPool", {"p": 3, "strides": [2, 1]}), ("LpPool", {"pads": [1, 1, 1, 1]})])
def test_pools_with_ceil_mode_and_lp_pool(op, attrs):
    x = RNG.standard_normal((1, 2, 7, 6)).astype(np.float32)
    check(one_node(op, {"x": x}, kernel_shape=[3, 2], **attrs), {"x": x}, rtol=1e-3)


@pytest.mark.parametrize("attrs,lengths", [
    ({"is_causal": 1, "left_window_size": 2}, None), ({"right_window_size": 1}, None),
    ({"is_causal": 1}, [5, 3]), ({"left_window_size": 1, "right_window_size": 0}, [4, 6])])
def test_attention_with_sliding_windows_and_key_lengths(attrs, lengths):
    q, k, v = (RNG.standard_normal((2, 2, s, 4)).astype(np.float32) for s in (3, 6, 6))
    inputs = {"q": q, "k": k, "v": v}
    names = ["q", "k", "v"]
    if lengths is not None:
        inputs["lengths"] = np.array(lengths, np.int64)
        names += ["", "", "", "lengths"]
    node = helper.make_node("Attention", names, ["y"], **attrs)
    graph = model([node], [info(n, a) for n, a in inputs.items()],
                  [helper.make_tensor_value_info("y", 0, None)], opset=24)
    check(graph, inputs, reference=True)


def test_attention_computes_its_softmax_in_softmax_precision():
    """Half-precision inputs, the softmax in f32 (the probabilities, output
    mode 3, back in f16): one rounding to f16 at the end, whatever the
    machine's half-precision arithmetic."""
    q, k, v = (RNG.standard_normal((1, 2, s, 8)).astype(np.float16) for s in (4, 6, 6))
    node = helper.make_node("Attention", ["q", "k", "v"], ["y", "", "", "p"],
                            softmax_precision=TensorProto.FLOAT, qk_matmul_output_mode=3)
    graph = model([node], [info(n, a) for n, a in (("q", q), ("k", k), ("v", v))],
                  [helper.make_tensor_value_info(o, 0, None) for o in ("y", "p")], opset=24)
    check(graph, {"q": q, "k": k, "v": v}, rtol=2e-3, atol=1e-3, reference=True)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], softmax_precision=6)
    graph = model([node], [info(n, a) for n, a in (("q", q), ("k", k), ("v", v))],
                  [helper.make_tensor_value_info("y", 0, None)], opset=24)
    with pytest.raises(Exception, match="softmax_precision=6 is not supported"):
        load(graph)


def test_swiglu_center_crop_pad_and_reverse_sequence():
    a, b = (RNG.standard_normal((2, 6)).astype(np.float32) for _ in range(2))
    check(one_node("SwiGLU", {"a": a, "b": b}, opset=28), {"a": a, "b": b}, reference=True)
    x = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    graph = model([helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[0, 1])],
                  [info("x", x)], [helper.make_tensor_value_info("y", 0, None)],
                  [numpy_helper.from_array(np.array([3, 7], np.int64), "shape")], opset=18)
    check(graph, {"x": x})
    lengths = np.array([3, 1, 4], np.int64)
    x = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    check(one_node("ReverseSequence", {"x": x, "lengths": lengths}, opset=10, batch_axis=1,
                   time_axis=0), {"x": x, "lengths": lengths})


@pytest.mark.parametrize("op,attrs", [
    ("Conv", {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "dilations": [1, 2, 1]}),
    ("Conv", {"group": 2}),
    ("MaxPool", {"strides": [2, 2, 1], "pads": [1, 1, 0, 0, 1, 0]}),
    ("AveragePool", {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1], "ceil_mode": 1,
                     "count_include_pad": 1}),
    ("LpPool", {"p": 2, "dilations": [1, 2, 1]})])
def test_three_dimensional_windows(op, attrs):
    x = RNG.standard_normal((2, 4, 5, 6, 5)).astype(np.float32)
    inputs = {"x": x}
    if op == "Conv":
        inputs["w"] = RNG.standard_normal((6, 4 // attrs.get("group", 1), 2, 3, 2)).astype(
            np.float32)
        inputs["b"] = RNG.standard_normal((6,)).astype(np.float32)
    else:
        attrs = {**attrs, "kernel_shape": [2, 2, 3]}
    # onnxruntime does not take LpPool's dilations (opset 18): onnx's reference does
    check(one_node(op, inputs, opset=19, **attrs), inputs, rtol=1e-3, reference=op == "LpPool")


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_dilated_two_dimensional_pools(op):
    x = RNG.standard_normal((1, 3, 8, 7)).astype(np.float32)
    check(one_node(op, {"x": x}, kernel_shape=[3, 2], dilations=[2, 3], strides=[1, 2],
                   pads=[1, 1, 2, 0], opset=19), {"x": x}, rtol=1e-3)
