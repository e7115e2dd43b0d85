"""parallel-reduce{reassociate=true}: loops that sum or multiply floats in a
chain (written without reduce(), which infer-reductions leaves as
written) fold like reductions when the caller allows another order; the
results stay within rounding of the interpreter's on every usable target,
only the named nodes change, and without the option such nodes are
refused with the reason."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.kernel import For
from hpvm.ir.text import parse_module, print_module
from hpvm.lang import Buffer, Out, cos, f32, parallel_loop, sin, task
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.parallel_reduce import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets


@hl.program
def chains(a: Buffer[f32, "R", "C"], v: Buffer[f32, "C"], w: Buffer[f32, "C"],
           dots: Out[Buffer[f32, "R"]], waves: Out[Buffer[f32, "R", 2]],
           summary: Out[Buffer[f32, 2]]):
    for r in parallel_loop(R, ins=(a, v), outs=(dots,), name="dot"):
        acc: f32 = 0.0
        for c in range(C):
            acc += a[r, c] * v[c]
        dots[r] = acc
    for r in parallel_loop(R, ins=(a, w), outs=(waves,), name="wave"):
        real: f32 = 0.0
        imag: f32 = 0.0
        for c in range(C):
            phase = a[r, c] * w[c]
            real += w[c] * cos(phase)
            imag = imag + w[c] * sin(phase)
        waves[r, 0] = real
        waves[r, 1] = imag
    with task(ins=(v, w), outs=(summary,), name="norms"):
        total: f32 = 0.0
        scale: f32 = 1.0
        for c in range(C):
            total = total + v[c] * v[c]
            scale *= 1.0 + w[c] * 0.001
        summary[0] = total
        summary[1] = scale


def chains_inputs(rng, rows=6, cols=301):
    return {"a": rng.standard_normal((rows, cols)).astype(np.float32),
            "v": rng.standard_normal(cols).astype(np.float32),
            "w": rng.uniform(-1, 1, cols).astype(np.float32)}


@pytest.mark.parametrize("pipeline", [
    "parallel-reduce{lanes=32 reassociate=true}",
    "parallel-reduce{form=chunks lanes=4 reassociate=true}",
    "parallel-reduce{form=chunks lanes=64 layout=strided grain=16 reassociate=true},"
    "parallel-reduce{lanes=8 reassociate=true}",
])
def test_float_chains_fold_in_another_order_within_rounding(pipeline):
    module = chains.build()
    optimised = run_pipeline(module, pipeline, verify_each=True)
    assert optimised != module
    inputs = chains_inputs(np.random.default_rng(0))
    expected = Interpreter(module).run(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(optimised, [target])(**inputs), expected, 1e-4, 1e-4,
                             f"{pipeline} on {target}")


def test_without_the_option_float_chains_stay_as_written():
    module = chains.build()
    assert eligible_nodes(module, "tree") == []
    assert eligible_nodes(module, "tree", reassociate=True) == [
        "chains.dot", "chains.wave", "chains.norms"]
    assert eligible_nodes(module, "chunks", reassociate=True) == ["chains.norms"]
    with pytest.raises(PassError, match="node 'dot' has no reduction loop at the top level"):
        run_pipeline(module, "parallel-reduce{nodes=dot}")
    assert run_pipeline(module, "parallel-reduce,infer-reductions") == \
        run_pipeline(module, "infer-reductions")


def test_only_the_named_node_is_reassociated():
    module = chains.build()
    result = run_pipeline(module, "parallel-reduce{lanes=16 reassociate=true nodes=wave}",
                          verify_each=True)
    nodes = {n.name: n for n in result.root_graph.nodes}
    assert tuple(nodes["wave"].attributes["group"]) == (1, 16)
    for name in ("dot", "norms"):
        assert result.functions[nodes[name].body.function] == \
            module.functions[module.root_graph.node(name).body.function]
    tree = result.functions[nodes["wave"].body.function]
    loops = [s for s in tree.body if isinstance(s, For)]
    assert [sorted(r.op for r in loop.reduce) for loop in loops] == [["add", "add"]]


SHARED = """hpvm 1.1
module shared

func @sum(in x: f32[N], out total: f32[1]) {
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 {
    acc = acc + x[i]
  }
  total[0] = acc
}

graph @main(in a: f32[N], in b: f32[N], out ta: f32[1], out tb: f32[1]) {
  node first = @sum
  node second = @sum
  in a -> first.x
  in b -> second.x
  out first.total -> ta
  out second.total -> tb
}

root @main
"""


def test_a_kernel_two_nodes_share_is_reassociated_for_the_named_one_only():
    module = parse_module(SHARED)
    result = run_pipeline(module, "parallel-reduce{form=chunks lanes=4 reassociate=true "
                                  "nodes=first}", verify_each=True)
    text = print_module(result)
    assert "node second = @sum" in text and "node first = @sum_combine" in text
    assert result.functions["sum"] == module.functions["sum"]
    inputs = {"a": np.linspace(-1, 2, 1001, dtype=np.float32),
              "b": np.linspace(3, -1, 1001, dtype=np.float32)}
    expected = Interpreter(module).run(**inputs)
    got = Interpreter(result).run(**inputs)
    np.testing.assert_array_equal(got["tb"], expected["tb"])
    assert_outputs_close(got, expected, 1e-5, 1e-5)


@pytest.mark.parametrize("form", ["tree", "chunks"])
def test_a_lane_loop_keeps_the_unroll_factor_given_to_the_loop(form):
    """The tuner's unroll factor of a loop (a hint) applies to the loop
    each lane runs in its place."""
    module = parse_module(SHARED.replace("step 1 {", "step 1 [unroll = 4] {"))
    result = run_pipeline(module, f"parallel-reduce{{form={form} lanes=8 reassociate=true "
                                  "nodes=first}", verify_each=True)
    function = result.functions["sum_tree" if form == "tree" else "sum_partial"]
    [loop] = [s for s in function.body if isinstance(s, For)]
    assert loop.unroll == 4 and loop.reduce
