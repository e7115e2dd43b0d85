"""parallel-reduce: reduction loops folded by many instances, as a tree in
a work group's local memory (form=tree) or as a node of partial results
per chunk (form=chunks); results equal the interpreter's on the original
program on every usable target; ineligible nodes are refused with the
reason."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.demo.edge_detection import edge_detect, make_inputs, reference
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.kernel import For
from hpvm.ir.text import parse_module, print_module
from hpvm.lang import Buffer, f32, i32, parallel_loop, reduce, task
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.parallel_reduce import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
FORMS = ["parallel-reduce{lanes=8}", "parallel-reduce{form=chunks lanes=4}",
         "parallel-reduce{form=chunks lanes=64 layout=strided grain=16},parallel-reduce{lanes=4}"]


@hl.program
def statistics(x: Buffer[f32, "R", "C"], bits: Buffer[i32, "N"], out: Buffer[f32, "R"],
               summary: Buffer[f32, 4], flags: Buffer[i32, 3]):
    for r in parallel_loop(R, ins=(x,), outs=(out,), name="row_sums"):
        out[r] = reduce("+", (x[r, c] for c in range(C)), initial=1.0)
    with task(ins=(x,), outs=(summary,), name="whole"):
        low = reduce(min, (x[i, j] for i in range(R) for j in range(1, C)))
        high = reduce(max, (x[i, j] for i in range(R - 1, -1, -1) for j in range(0, C, 2)))
        count = reduce("+", (1 for i in range(R) for j in range(C) if x[i, j] > 0.5))
        summary[0] = low
        summary[1] = high
        summary[2] = f32(count)
        summary[3] = low + high
    with task(ins=(bits,), outs=(flags,), name="bitwise"):
        flags[0] = reduce("^", (bits[i] for i in range(0, N, 3)))
        flags[1] = reduce("&", (bits[i] for i in range(N)))
        flags[2] = reduce("|", (bits[i] for i in range(N - 1, 0, -2)))


def statistics_inputs(rng, rows=5, cols=37, n=29):
    return {"x": rng.random((rows, cols), dtype=np.float32),
            "bits": rng.integers(0, 1 << 20, n).astype(np.int32) | 0x100}


def test_the_tree_form_folds_a_work_group_in_local_memory():
    result = run_pipeline(edge_detect.build(), "parallel-reduce{lanes=4}", verify_each=True)
    text = print_module(result)
    assert "node row_max = @row_max_tree [H, 4] {group = [1, 4]}" in text
    assert "node max = @max_tree [4] {group = [4]}" in text
    body = text[text.index("func @max_tree"):text.index("graph @")]
    assert body == """func @max_tree(in row_max: f32[H], out peak: f32[1]) {
  let lane: i64 = instance_id(0)
  let reduced: f32 = f32(-inf)
  let reduced_partial: f32 = f32(-inf)
  let y_count: i64 = max(H, 0)
  for iteration in lane .. y_count step 4 [reduce reduced_partial: max] {
    let y: i64 = iteration
    reduced_partial = max(reduced_partial, row_max[y])
  }
  local reduced_lanes: f32[4] = undef
  reduced_lanes[lane] = reduced_partial
  barrier
  if lane < 2 {
    reduced_lanes[lane] = max(reduced_lanes[lane], reduced_lanes[lane + 2])
  }
  barrier
  if lane < 1 {
    reduced_lanes[lane] = max(reduced_lanes[lane], reduced_lanes[lane + 1])
  }
  barrier
  reduced = max(reduced, reduced_lanes[0])
  if lane == 0 {
    peak[0] = reduced
  }
}

"""


def test_the_chunks_form_adds_a_node_of_partial_results():
    result = run_pipeline(edge_detect.build(), "parallel-reduce{form=chunks lanes=4}",
                          verify_each=True)
    text = print_module(result)
    assert ('node max_partial = @max_partial [4] {partials_of = "max"}\n'
            '  node max = @max_combine') in text
    assert "edge max_partial.reduced_partials -> max.reduced_partials all-to-all" in text
    assert "edge row_max.row_max -> max_partial.row_max all-to-all" in text
    assert "for iteration in lane * chunk .. min(lane * chunk + chunk, y_count) step 1" in text
    assert "node row_max = @row_max [H]" in text   # replicated: left to its instances
    assert eligible_nodes(edge_detect.build(), "chunks") == ["edge_detect.max"]


@pytest.mark.parametrize("pipeline", FORMS)
def test_every_kind_of_reduction_keeps_its_result_on_every_target(pipeline):
    module = statistics.build()
    optimised = run_pipeline(module, pipeline, verify_each=True)
    assert optimised != module
    inputs = statistics_inputs(np.random.default_rng(3))
    expected = Interpreter(module).run(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(optimised, [target])(**inputs), expected, 1e-5, 1e-5,
                             f"{pipeline} on {target}")


@pytest.mark.parametrize("pipeline", FORMS)
def test_edge_detection_is_exact_after_either_form(pipeline):
    module = run_pipeline(edge_detect.build(), pipeline, verify_each=True)
    inputs = make_inputs(np.random.default_rng(0))
    for target in usable_targets():
        np.testing.assert_array_equal(hpvm.compile(module, [target])(**inputs)["edges"],
                                      reference(inputs)["edges"], err_msg=target)


def test_the_tree_runs_on_gpu_opencl_and_the_chunks_on_cpu():
    module = statistics.build()
    inputs = statistics_inputs(np.random.default_rng(4), rows=3, cols=300, n=1000)
    expected = Interpreter(module).run(**inputs)
    for target, pipeline in (("gpu_opencl", FORMS[0]), ("cpu", FORMS[1]), ("gpu_opencl", FORMS[2])):
        if target not in usable_targets():
            continue
        exe = hpvm.compile(run_pipeline(module, pipeline), [target])
        assert set(exe.placement.targets.values()) == {target}, exe.placement.format()
        assert_outputs_close(exe(**inputs), expected, 1e-5, 1e-5, target)


PROGRAM = """hpvm 1.1
module t

func @k(in a: f32[N], out b: f32[N], out total: f32[1]) {
  let acc: f32 = f32(0.0)
  b[0] = acc
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i]
  }
  total[0] = acc
}

func @carried(in a: f32[N], out total: f32[1]) {
  let acc: f32 = f32(0.0)
  let previous: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i] * previous
    previous = a[i]
  }
  total[0] = acc
}

func @twice(in a: f32[N], out total: f32[1]) {
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i]
  }
  let mean: f32 = acc / f32(2.0)
  let spread: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce spread: max] {
    spread = max(spread, a[i] - mean)
  }
  total[0] = spread
}

func @plain(in a: f32[N], out total: f32[1]) {
  total[0] = a[0]
}

graph @main(in a: f32[N], out b: f32[N], out total: f32[1], out t2: f32[1], out t3: f32[1],
            out t4: f32[1]) {
  node k = @k
  node carried = @carried
  node twice = @twice
  node plain = @plain
  in a -> k.a
  in a -> carried.a
  in a -> twice.a
  in a -> plain.a
  out k.b -> b
  out k.total -> total
  out carried.total -> t2
  out twice.total -> t3
  out plain.total -> t4
}

root @main
"""


@pytest.mark.parametrize("form, node, reason", [
    ("tree", "k", "writes 'b' before its last reduction loop"),
    ("tree", "carried", "carries 'previous' from one iteration to the next"),
    ("tree", "plain", "has no reduction loop at the top level"),
    ("chunks", "twice", "reads 'acc' before its last reduction loop"),
    ("tree", "nowhere", "no node named 'nowhere'"),
])
def test_ineligible_nodes_are_refused_with_the_reason(form, node, reason):
    with pytest.raises(PassError, match=reason):
        run_pipeline(parse_module(PROGRAM), f"parallel-reduce{{form={form} nodes={node}}}")


def test_the_default_transforms_only_eligible_nodes():
    module = parse_module(PROGRAM)
    assert eligible_nodes(module, "tree") == ["main.twice"]
    result = run_pipeline(module, "parallel-reduce{lanes=2}", verify_each=True)
    assert [n.name for n in result.root_graph.nodes] == ["k", "carried", "twice", "plain"]
    inputs = {"a": np.arange(9, dtype=np.float32)}
    assert_outputs_close(Interpreter(result).run(**inputs), Interpreter(module).run(**inputs))


@pytest.mark.parametrize("lanes", [3, 2048])
def test_a_tree_needs_a_power_of_two_lanes(lanes):
    with pytest.raises(PassError, match="power of two"):
        run_pipeline(edge_detect.build(), f"parallel-reduce{{lanes={lanes}}}")


def test_a_replicated_node_is_left_to_its_instances_by_chunks():
    with pytest.raises(PassError, match="is replicated"):
        run_pipeline(edge_detect.build(), "parallel-reduce{form=chunks nodes=row_max}")


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("pipeline", FORMS)
def test_corpus_programs_keep_their_results(program, pipeline):
    module = run_pipeline(program.build(), pipeline, verify_each=True)
    inputs = program.make_inputs(np.random.default_rng(1))
    expected = Interpreter(program.build()).run(**inputs)
    assert_outputs_close(Interpreter(module).run(**inputs), expected,
                         max(program.rtol, 1e-5), max(program.atol, 1e-6), program.name)


def test_fused_reduction_loops_fold_both_variables():
    """loop-fusion merges SRAD's two sums into one loop nest that keeps
    both reductions, which one tree then folds."""
    import sys
    sys.path.insert(0, str(ROOT))
    from benchmarks.programs.srad import make_inputs as srad_inputs, srad
    module = srad.build()
    fused = run_pipeline(module, "loop-fusion", verify_each=True)
    function = fused.functions[fused.root_graph.node("roi_statistics").body.function]
    loops = [s for s in function.body if isinstance(s, For)]
    assert len(loops) == 1 and len(loops[0].reduce) == 2
    tree = run_pipeline(fused, "parallel-reduce{lanes=8 nodes=roi_statistics}", verify_each=True)
    text = print_module(tree)
    assert text.count("barrier") == 4   # one tree of log2(8) steps for both sums
    inputs = srad_inputs("small", np.random.default_rng(0))
    assert_outputs_close(Interpreter(tree).run(**inputs), Interpreter(module).run(**inputs),
                         1e-5, 1e-6)


def test_chunks_follow_the_sizes_with_a_grain_and_are_not_split_again():
    module = run_pipeline(edge_detect.build(), FORMS[2], verify_each=True)
    nodes = {n.name: n for n in module.root_graph.nodes}
    assert print_module(module).count("@max_partial [min(max((max(H, 0) + 15) / 16, 1), 64)]") == 1
    assert nodes["max_partial"].attributes == {"partials_of": "max"}
    assert nodes["max"].attributes == {"group": (4,)}   # the combine folds as a tree
    with pytest.raises(PassError, match="already folds chunks of node 'max'"):
        run_pipeline(module, "parallel-reduce{nodes=max_partial}")
