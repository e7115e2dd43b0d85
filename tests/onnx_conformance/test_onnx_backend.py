"""onnx's own backend node tests (onnx.backend.test) for the operators the
tensor-op set covers, on the targets interp, cpu and aten.

Reshape shapes and Clip bounds given as run-time inputs are specialised
when the model runs (see hpvm.onnx_backend).

In scope: every node test of the ONNX operators that map to hpvm tensor ops
(IN_SCOPE_OPS), except the cases OUT_OF_SCOPE lists, each for a feature the
tensor-op set does not have.  A failure of any other case is a bug.
"""
import re
import warnings

import pytest

onnx_test = pytest.importorskip("onnx.backend.test")

from hpvm.onnx_backend import backend_for  # noqa: E402

IN_SCOPE_OPS = {
    "Conv": r"(basic_)?conv", "MatMul": "matmul", "Gemm": "gemm", "Add": "add", "Mul": "mul",
    "Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Clip": "clip",
    "MaxPool": "maxpool", "AveragePool": "averagepool",
    "GlobalAveragePool": "globalaveragepool", "GlobalMaxPool": "globalmaxpool",
    "Softmax": "softmax", "BatchNormalization": "batchnorm", "Reshape": "reshape",
    "Flatten": "flatten", "Concat": "concat",
}
OUT_OF_SCOPE = {
    r".*_expanded(_ver\d+)?": "the op's function body (other ONNX ops), not the op",
    r"matmul_(1d_1d|1d_3d|4d|4d_1d|bcast)": "matmul takes ranks 2 and 3",
    r"(maxpool|averagepool)_(1d|3d)_.*": "pooling is 2-D (NCHW)",
    r"(maxpool|averagepool)_2d_(ceil.*|dilations)": "pooling has no ceil_mode or dilation",
    r"maxpool_with_argmax_.*": "max_pool has no Indices output",
    r"batchnorm_.*_training_mode": "batchnorm is inference only",
    r"reshape_allowzero_.*": "reshape has no allowzero",
    r"clip_default_int8_.*": "clipped_relu is defined on floats",
}
TARGETS = ("interp", "cpu", "aten")


def in_scope_pattern() -> str:
    ops = "|".join(IN_SCOPE_OPS.values())
    return rf"^test_({ops})(_.*)?_(cpu|cuda)$"


def out_of_scope_pattern() -> str:
    return rf"^test_({'|'.join(OUT_OF_SCOPE)})_(cpu|cuda)$"


def backend_tests(target: str):
    suite = onnx_test.BackendTest(backend_for(target), f"{__name__}_{target}")
    suite.include(in_scope_pattern())
    suite.exclude(out_of_scope_pattern())
    # Whole-model tests need downloads; node tests only.
    suite.exclude(r"^test_(bvlc|densenet|inception|resnet|shufflenet|squeezenet|vgg|zfnet)")
    return suite


for _target in TARGETS:
    if _target == "aten":
        try:
            import torch  # noqa: F401
        except ImportError:
            continue
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _cases = backend_tests(_target).enable_report().test_cases
    for _name, _case in _cases.items():
        globals()[f"{_name}_{_target}"] = _case


def test_the_scope_selects_node_tests_of_every_listed_operator():
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = [case.name for case in load_model_tests(kind="node")]
    selected = [n for n in names if re.match(in_scope_pattern(), n + "_cpu")
                and not re.match(out_of_scope_pattern(), n + "_cpu")]
    for op, pattern in IN_SCOPE_OPS.items():
        assert any(re.match(rf"test_{pattern}(_|$)", n) for n in selected), op
