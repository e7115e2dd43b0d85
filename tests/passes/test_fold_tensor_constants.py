"""fold-tensor-constants evaluates tensor ops whose inputs are constants."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.ir.graph import ConstantBody
from hpvm.passes import run_pipeline
from hpvm.runtime import compile


def weights_model():
    """y = x @ relu(reshape(w) * 2): the right-hand side is all constants."""
    w = np.arange(-6, 6, dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["w", "shape"], ["w2"]),
         helper.make_node("Mul", ["w2", "two"], ["w3"]),
         helper.make_node("Relu", ["w3"], ["w4"]),
         helper.make_node("MatMul", ["x", "w4"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([3, 4]), "shape"),
         numpy_helper.from_array(np.array(2, np.float32), "two")])
    return load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                optimize=False)


def test_chains_of_ops_on_constants_fold_into_one_constant():
    folded = run_pipeline(weights_model(), "fold-tensor-constants", verify_each=True)
    kinds = sorted(type(n.body).__name__ for n in folded.root_graph.nodes)
    assert kinds == ["ConstantBody", "TensorBody"]
    constant = next(n for n in folded.root_graph.nodes if isinstance(n.body, ConstantBody))
    np.testing.assert_array_equal(constant.body.data,
                                  np.maximum(np.arange(-6, 6).reshape(3, 4) * 2, 0))


def test_folded_module_computes_the_same_result():
    before = weights_model()
    after = run_pipeline(before, "fold-tensor-constants")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(compile(after, ["cpu"])(x=x)["y"],
                               compile(before, ["interp"])(x=x)["y"], rtol=1e-6)


def test_results_above_the_size_limit_stay_as_ops():
    folded = run_pipeline(weights_model(), "fold-tensor-constants{max_elements=4}")
    assert len(folded.root_graph.nodes) == len(weights_model().root_graph.nodes)
