"""Which of onnx's own backend node tests (``onnx.backend.test``) hpvm
covers, and how to read one: the ONNX operators that map to hpvm tensor
ops (IN_SCOPE_OPS), less the cases OUT_OF_SCOPE lists, each for a feature
the tensor-op set does not have.  A failure of any other case is a bug.

Used by tests/onnx_conformance (every case on interp, cpu and aten) and by
the cpu target's CPU-model tests (every case compiled for several models).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests

IN_SCOPE_OPS = {
    "Conv": r"(basic_)?conv", "MatMul": "matmul", "Gemm": "gemm", "Add": "add", "Mul": "mul",
    "Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Clip": "clip",
    "MaxPool": "maxpool", "AveragePool": "averagepool",
    "GlobalAveragePool": "globalaveragepool", "GlobalMaxPool": "globalmaxpool",
    "Softmax": "softmax", "BatchNormalization": "batchnorm", "Reshape": "reshape",
    "Flatten": "flatten", "Concat": "concat", "PRelu": "prelu", "LRN": "lrn",
    "Slice": "slice", "Split": "split", "Transpose": "transpose",
    "Pad": r"(constant|edge|reflect|wrap)_pad",
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
    r"wrap_pad": "pad has the modes constant, edge and reflect (not wrap)",
    r"split_to_sequence_.*": "SplitToSequence makes a sequence; hpvm has no sequence type",
    r"(split_zero_size_splits_.*|slice_start_out_of_bounds)": "an empty result: tensors "
                                                              "have no zero-size dimensions",
}


def in_scope_pattern() -> str:
    ops = "|".join(IN_SCOPE_OPS.values())
    return rf"^test_({ops})(_.*)?_(cpu|cuda)$"


def out_of_scope_pattern() -> str:
    return rf"^test_({'|'.join(OUT_OF_SCOPE)})_(cpu|cuda)$"


def in_scope(name: str) -> bool:
    """Whether node test ``name`` (``test_relu``) is in scope."""
    return bool(re.match(in_scope_pattern(), name + "_cpu")
                and not re.match(out_of_scope_pattern(), name + "_cpu"))


KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")
"""onnx's kinds of test cases that ship their models (the 'real' kind downloads)."""


def in_scope_node_tests() -> list:
    """onnx's test cases in scope (``onnx.backend.test.loader``'s TestCase),
    the ONNX models and data onnx ships."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [case for kind in KINDS for case in load_model_tests(kind=kind)
                if in_scope(case.name)]


def read_case(case) -> tuple:
    """(model, inputs, expected outputs) of a test case, from its first
    data set (held in the case, or in its folder)."""
    if case.model is not None and case.data_sets:
        inputs, outputs = case.data_sets[0]
        return case.model, list(inputs), list(outputs)
    folder = Path(case.model_dir)
    model = onnx.load(str(folder / "model.onnx"))
    data = sorted(folder.glob("test_data_set_*"))[0]

    def tensors(prefix: str) -> list:
        return [numpy_helper.to_array(onnx.load_tensor(str(path)))
                for path in sorted(data.glob(f"{prefix}_*.pb"),
                                   key=lambda p: int(p.stem.split("_")[1]))]

    return model, tensors("input"), tensors("output")
