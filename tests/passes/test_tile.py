"""tile: a work group's reads through local memory, in whole (padded)
groups; results equal the original program's on every usable target, on
sizes that are not multiples of the group; ineligible nodes are refused
with the reason."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.demo.edge_detection import edge_detect, make_inputs
from hpvm.errors import VerificationError
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.text import load_module, parse_module, print_module
from hpvm.ir.verify import verify
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.tile import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
MATMUL = ROOT / "examples" / "ir" / "matmul.hpvm"
BLUR = load_python_file(ROOT / "examples" / "blur.py").blur3x3


def matmul_inputs(rng, m=37, k=29, n=21):
    return {"a": rng.standard_normal((m, k)).astype(np.float32),
            "b": rng.standard_normal((k, n)).astype(np.float32)}


def test_matmul_runs_its_k_loop_in_blocks_through_two_tiles():
    tiled = run_pipeline(load_module(MATMUL), "tile{size=4}", verify_each=True)
    text = print_module(tiled)
    assert "node mm = @matmul_tiled [M, N] {group = [4, 4], padded_groups = true}" in text
    assert "acc = acc + a_tile[lane_row, k_step] * b_tile[k_step, lane_col]" in text
    assert text.count("barrier") == 2
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("target", usable_targets(("interp", "gpu_opencl")))
@pytest.mark.parametrize("size", [4, 16])
def test_tiled_matmul_keeps_the_sums_order_on_sizes_that_are_not_multiples(target, size):
    """The same sums in the same order: equal to the untiled program on
    the same target (an OpenCL compiler may contract a * b + c either way)."""
    module = load_module(MATMUL)
    inputs = matmul_inputs(np.random.default_rng(0))
    expected = hpvm.compile(module, targets=[target])(**inputs)
    tiled = run_pipeline(module, f"tile{{size={size}}}", verify_each=True)
    exe = hpvm.compile(tiled, targets=[target])
    np.testing.assert_array_equal(exe(**inputs)["c"], expected["c"])


def test_stencils_read_their_neighbourhood_from_a_tile_with_a_halo():
    tiled = run_pipeline(BLUR.build(), "tile{size=8 halo=1}", verify_each=True)
    text = print_module(tiled)
    assert "local img_tile: f32[10, 10]" in text and "local bx_tile: f32[10, 10]" in text
    assert text.count("padded_groups = true") == 2


@pytest.mark.parametrize("target", usable_targets(("interp", "gpu_opencl")))
@pytest.mark.parametrize("pipeline", ["tile{size=8 halo=1}", "tile{size=4 halo=0}",
                                      "tile{form=stencil size=16 halo=3}"])
def test_tiled_stencils_keep_their_results(target, pipeline):
    inputs = {"img": np.random.default_rng(2).random((35, 50), dtype=np.float32)}
    expected = Interpreter(BLUR.build()).run(**inputs)
    exe = hpvm.compile(run_pipeline(BLUR.build(), pipeline, verify_each=True), targets=[target])
    np.testing.assert_array_equal(exe(**inputs)["out"], expected["out"])


def test_the_edge_pipeline_keeps_its_result_with_every_eligible_node_tiled():
    module = edge_detect.build()
    nodes = eligible_nodes(module)
    assert nodes, "the edge pipeline's sobel and smoothing stages read neighbourhoods"
    inputs = make_inputs(np.random.default_rng(0))   # 24 x 32: padded groups of 5 x 5
    tiled = run_pipeline(module, "tile{size=5}", verify_each=True)
    for target in usable_targets(("interp", "gpu_opencl")):
        assert_outputs_close(hpvm.compile(tiled, targets=[target])(**inputs),
                             Interpreter(module).run(**inputs), 1e-5, 1e-6, target)


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_corpus_programs_keep_their_results(program):
    module = run_pipeline(program.build(), "inline,tile{size=4 halo=1}", verify_each=True)
    inputs = program.make_inputs(np.random.default_rng(1))
    expected = Interpreter(program.build()).run(**inputs)
    assert_outputs_close(Interpreter(module).run(**inputs), expected,
                         max(program.rtol, 1e-5), max(program.atol, 1e-6), program.name)


@pytest.mark.parametrize("pipeline, message", [
    ("tile{nodes=mm form=stencil}", r"node 'mm' stencil: reads no two-dimensional input as a "
                                    r"neighbourhood"),
    ("tile{size=4},tile{nodes=mm}", r"node 'mm' has a work-group size already"),
    ("tile{size=2 form=matmul nodes=mm},tile{nodes=mm}", r"has a work-group size already"),
])
def test_ineligible_nodes_are_refused_with_the_reason(pipeline, message):
    with pytest.raises(PassError, match=message):
        run_pipeline(load_module(MATMUL), pipeline)


def test_one_dimensional_nodes_are_refused():
    text = """hpvm 1.1
module m

func @scale(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * f32(2.0)
}

graph @main(in x: f32[N], out y: f32[N]) {
  node s = @scale [N]
  in x -> s.x
  out s.y -> y
}

root @main
"""
    with pytest.raises(PassError, match=r"has 1 replication dimension\(s\); tiles are for two"):
        run_pipeline(parse_module(text), "tile{nodes=s}")


def test_padded_groups_needs_a_group_and_a_boolean():
    text = print_module(load_module(MATMUL)).replace(
        "node mm = @matmul [M, N]", "node mm = @matmul [M, N] {padded_groups = 1}")
    with pytest.raises(VerificationError, match=r"'padded_groups' 1 must be true or false, on a "
                                                r"node with a 'group'"):
        verify(parse_module(text))
