"""Cross-compiled matmul for aarch64 and riscv64, run under qemu-user and
compared with the reference interpreter.  .ci/run installs the cross
compilers and qemu-user; without them these tests are skipped."""
from pathlib import Path

import pytest

from hpvm.errors import TargetError
from hpvm.interp import run_module
from hpvm.ir.graph import KernelBody
from hpvm.ir.shapes import replication_sizes
from hpvm.ir.text import load_module
from hpvm.testing import assert_outputs_close, random_inputs
from hpvm_cpu.codegen import CROSS_TRIPLES
from hpvm_cpu.cross import build_runner, run_runner, toolchain

MATMUL = Path(__file__).resolve().parents[3] / "examples" / "ir" / "matmul.hpvm"


@pytest.mark.parametrize("triple", CROSS_TRIPLES)
def test_cross_compiled_matmul_matches_the_interpreter(triple, tmp_path):
    try:
        toolchain(triple)
    except TargetError as missing:
        pytest.skip(str(missing))
    module = load_module(MATMUL)
    (node,) = module.root_graph.nodes
    assert isinstance(node.body, KernelBody)
    function = node.body.function
    sizes = {"M": 7, "K": 9, "N": 5}
    inputs = random_inputs(module.root_graph, sizes)
    expected = run_module(module, inputs)
    program = build_runner(module, function, len(node.replication), triple, tmp_path)
    kernel = module.functions[function]
    args = {p.name: inputs.get(p.name) for p in kernel.params}
    out_param = next(p for p in kernel.params if p.direction == "out")
    args[out_param.name] = expected[out_param.name] * 0
    replication = replication_sizes(node.replication, sizes)
    result = run_runner(program, triple, module, function, len(node.replication), args, replication)
    assert_outputs_close({"c": result[out_param.name]}, expected, rtol=1e-5, atol=1e-5, label=triple)
