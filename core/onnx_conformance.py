"""Which of onnx's own backend test cases (``onnx.backend.test``) hpvm
covers, and how to read one: every case whose model uses only operators
the ONNX importer converts (hpvm.frontend.onnx.importer.KNOWN_OPS), less
the cases OUT_OF_SCOPE lists, each for a feature hpvm does not have.  A
failure of any other case is a bug.

Used by tests/onnx_conformance (every case on interp, cpu, gpu_opencl,
aten and movidius) and by the cpu target's CPU-model tests (every case compiled for
several models).
"""
from __future__ import annotations

import re
import warnings
from functools import lru_cache
from pathlib import Path

import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests

from .frontend.onnx.importer import KNOWN_OPS

OUT_OF_SCOPE = {
    r".*(e8m0|E8M0|string|STRING).*": "element types float8e8m0 and string are not IR types",
    r"attention_.*bf16.*|celu_bfloat16.*": "bf16 compositions: onnx's reference rounds its "
                                           "own intermediate results to bf16, hpvm those of "
                                           "its ops; they differ by a bf16 ulp (4e-3), more "
                                           "than the suite's rtol of 1e-3",
    r"convtranspose_3d": "ConvTranspose is 1-D or 2-D",
    r"resize_.*antialias.*": "Resize's antialias",
    r"einsum_batch_diagonal": "Einsum's diagonals (a label repeated in one term)",
    r"causal_conv_with_state_silu_fp16_expanded": "f16: the expanded body's operations, "
                                                  "rounded one by one, differ from the "
                                                  "reference's result by 1 ulp",
    r"maxpool_with_argmax_.*": "max_pool has no Indices output",
    r"batchnorm_.*_training_mode|BatchNorm.*train.*": "batchnorm is inference only",
    r"reshape_allowzero_.*": "a reshape to a size 0 (allowzero): tensors have no zero-size "
                             "dimensions",
    r"identity_(opt|sequence)": "sequence and optional types are not IR types",
    r"wrap_pad": "pad has the modes constant, edge and reflect (not wrap)",
    r"split_to_sequence_.*": "SplitToSequence makes a sequence; hpvm has no sequence type",
    r"(split_zero_size_splits_.*|slice_start_out_of_bounds|.*empty_set.*|.*_empty_tensor.*|"
    r"rotary_embedding.*_expanded|causal_conv_with_state_kernel_size_one_expanded)":
        "an empty result: tensors have no zero-size dimensions",
    r"dropout_default_mask.*|dropout_default_mask_ratio|training_dropout.*":
        "Dropout's mask output and training mode",
    r"cast_(FLOAT|DOUBLE|FLOAT16)_to_(FLOAT|DOUBLE|FLOAT16)_no_saturate.*|cast_.*_to_STRING":
        "Cast's saturate and string conversions",
    r"cast(like)?_(FLOAT|FLOAT16|DOUBLE|BFLOAT16)_to_U?INT(2|4)(_expanded)?":
        "a float cast to int2/int4 out of their range, undefined by the ONNX spec: the "
        "expected values are whatever the installed ml_dtypes gives (0.6 wraps, 0.7 gives 0)",
    r"bitshift_.*negative_shift": "shift counts are taken modulo the bit width",
    r"PReLU_1d_multiparam|PReLU_2d_multiparam|PReLU_3d_multiparam":
        "PRelu's per-channel slope is given as [C] for an NC... input",
}
"""Name pattern of onnx test cases (without ``test_`` and the device) ->
why they are out of scope."""

NARROW_CASES = (r".*(bfloat16|bf16|BFLOAT16|float8|FLOAT8|e4m3|e5m2|E4M3|E5M2|int4|INT4|uint4|"
                r"UINT4|float4|FLOAT4|e2m1|E2M1|int2|uint2|INT2|UINT2).*")
"""Cases with narrow storage types (bf16, float8, float4, int4, int2)."""

NOT_ON = {
    NARROW_CASES: (("aten", "movidius"), "narrow storage types run on the cpu and interp; "
                                         "aten and movidius leave their nodes to another target"),
    r"attention_.*fp16.*": (("cpu", "gpu_opencl", "aten", "movidius"),
                            "f16 attention: compiled code rounds f16 intermediate results "
                            "elsewhere than numpy does, 1-2 f16 ulps from the reference, more "
                            "than the suite's rtol of 1e-3"),
}
"""Name pattern -> (targets that skip the cases, why)."""


def skipped_on_pattern(target: str) -> str | None:
    """A regular expression of the backend-test names ``target`` skips."""
    patterns = [p for p, (targets, _) in NOT_ON.items() if target in targets]
    return rf"^test_({'|'.join(patterns)})_(cpu|cuda)$" if patterns else None

KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")
"""onnx's kinds of test cases that ship their models (the 'real' kind downloads)."""


def operators(model) -> set[str]:
    """The operators of ``model``'s graph and its subgraphs, qualified by
    their domain where it is not the default one."""
    found: set[str] = set()

    def visit(graph):
        for node in graph.node:
            default = node.domain in ("", "ai.onnx")
            found.add(node.op_type if default else f"{node.domain}.{node.op_type}")
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    visit(attribute.g)
                for sub in attribute.graphs:
                    visit(sub)
    visit(model.graph)
    return found


def _out_of_scope(name: str) -> bool:
    return bool(re.match(rf"^test_({'|'.join(OUT_OF_SCOPE)})$", name))


FOLDED = frozenset({"Range", "ConstantOfShape", "BlackmanWindow", "HannWindow", "HammingWindow",
                    "MelWeightMatrix"})
"""Operators the importer evaluates when their inputs are constants (as the
backend makes the shape inputs of these cases), never on run-time data."""


def in_scope(case) -> bool:
    """Whether onnx test case ``case`` is in scope."""
    if _out_of_scope(case.name):
        return False
    return operators(_model(case)) <= KNOWN_OPS | FOLDED


@lru_cache(maxsize=1)
def _cases() -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(case for kind in KINDS for case in load_model_tests(kind=kind))


@lru_cache(maxsize=1)
def in_scope_node_tests() -> tuple:
    """onnx's test cases in scope (``onnx.backend.test.loader``'s TestCase),
    the ONNX models and data onnx ships."""
    return tuple(case for case in _cases() if in_scope(case))


def in_scope_pattern() -> str:
    """A regular expression matching the backend-test names of the cases in
    scope (``test_relu_cpu``)."""
    names = "|".join(re.escape(case.name[len("test_"):]) for case in in_scope_node_tests())
    return rf"^test_({names})_(cpu|cuda)$"


def _arrays(values) -> list:
    """Arrays of a data set held in a case (arrays or TensorProtos)."""
    return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v for v in values]


def _model(case):
    if case.model is not None:
        return case.model
    return onnx.load(str(Path(case.model_dir) / "model.onnx"))


def read_case(case) -> tuple:
    """(model, inputs, expected outputs) of a test case, from its first
    data set (held in the case, or in its folder)."""
    if case.model is not None and case.data_sets:
        inputs, outputs = case.data_sets[0]
        return case.model, _arrays(inputs), _arrays(outputs)
    folder = Path(case.model_dir)
    model = _model(case)
    data = sorted(folder.glob("test_data_set_*"))[0]

    def tensors(prefix: str) -> list:
        return [numpy_helper.to_array(onnx.load_tensor(str(path)))
                for path in sorted(data.glob(f"{prefix}_*.pb"),
                                   key=lambda p: int(p.stem.split("_")[1]))]

    return model, tensors("input"), tensors("output")
