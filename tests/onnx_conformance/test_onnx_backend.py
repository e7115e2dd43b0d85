"""onnx's own backend node tests (onnx.backend.test) for the operators the
tensor-op set covers, on the targets interp, cpu, gpu_opencl (where an
OpenCL device is: PoCL here; a third of the cases, SAMPLED), aten and
movidius (OpenVINO's CPU device here).

Reshape shapes and Clip bounds given as run-time inputs are specialised
when the model runs (see hpvm.onnx_backend).

In scope: see hpvm.onnx_conformance (the cases whose operators the
importer converts, less OUT_OF_SCOPE).  A failure of any in-scope case is
a bug.
"""
import warnings
import zlib

import pytest

onnx_test = pytest.importorskip("onnx.backend.test")

from hpvm.onnx_backend import backend_for  # noqa: E402
from hpvm.onnx_conformance import (  # noqa: E402
    in_scope_node_tests, in_scope_pattern, skipped_on_pattern,
)
from hpvm.frontend.onnx.importer import KNOWN_OPS  # noqa: E402
from hpvm.testing import usable_targets  # noqa: E402

TARGETS = ("interp", "cpu", "gpu_opencl", "aten", "movidius")
NEEDS = {"aten": "torch", "movidius": "openvino"}
SAMPLED = {"gpu_opencl": 3}
"""Targets that run one case in N, the same ones every time (by a checksum
of the name): PoCL builds every case's kernels afresh, all of them would
add ten minutes to CI on two cores."""


def backend_tests(target: str):
    suite = onnx_test.BackendTest(backend_for(target), f"{__name__}_{target}")
    suite.include(in_scope_pattern())
    if skipped_on_pattern(target):
        suite.exclude(skipped_on_pattern(target))
    # Whole-model tests need downloads; node tests only.
    suite.exclude(r"^test_(bvlc|densenet|inception|resnet|shufflenet|squeezenet|vgg|zfnet)")
    return suite


for _target in TARGETS:
    if _target in NEEDS:
        try:
            __import__(NEEDS[_target])
        except ImportError:
            continue
    if _target == "gpu_opencl" and not usable_targets((_target,)):
        continue
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _cases = backend_tests(_target).enable_report().test_cases
    for _name, _case in _cases.items():
        for _test in [t for t in vars(_case) if t.startswith("test_")]:
            if zlib.crc32(_test.encode()) % SAMPLED.get(_target, 1):
                delattr(_case, _test)
        globals()[f"{_name}_{_target}"] = _case


def test_the_scope_holds_cases_of_most_converted_operators():
    from hpvm.onnx_conformance import operators, read_case
    covered = set().union(*(operators(read_case(case)[0]) for case in in_scope_node_tests()))
    assert len(in_scope_node_tests()) > 1000
    assert len(covered & KNOWN_OPS) > 0.8 * len(KNOWN_OPS), sorted(KNOWN_OPS - covered)
