"""sequentialize: replication becomes loops inside the kernel."""
import textwrap

import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.kernel import ArrayDecl, For, InstanceCount, InstanceId
from hpvm.ir.text import parse_module
from hpvm.ir.verify import verify
from hpvm.ir.visit import walk
from hpvm.passes import PassError, run_pipeline

TEMPLATE = """hpvm 1.0
module t

HELPERS

func @k(in a: f32[H, W], in n: i32, out b: f32[H, W]) {
  BODY
}

graph @main(in a: f32[H, W], in n: i32, out b: f32[H, W]) {
  node k = @k [REPLICATION]ATTRIBUTES
  in a -> k.a
  in n -> k.n
  out k.b -> b
}

root @main
"""


def kernel_module(body: str, replication: str = "H, W", helpers: str = "", attributes=""):
    lines = textwrap.dedent(body).strip().splitlines()
    text = (TEMPLATE.replace("BODY", "\n  ".join(lines)).replace("REPLICATION", replication)
            .replace("HELPERS", textwrap.dedent(helpers)).replace("ATTRIBUTES", attributes))
    return parse_module(text)


def sequentialize(module, options: str = ""):
    result = run_pipeline(module, "sequentialize" + options, verify_each=True)
    verify(result)
    return result


def assert_same_results(module, transformed, n=2):
    inputs = {"a": np.arange(12, dtype=np.float32).reshape(3, 4) - 5, "n": n}
    before = run_module(module, inputs)
    after = run_module(transformed, inputs)
    np.testing.assert_array_equal(before["b"], after["b"])


COPY_2D = "b[instance_id(0), instance_id(1)] = a[instance_id(0), instance_id(1)] * f32(2.0)"


def test_replication_becomes_nested_loops():
    m = kernel_module(COPY_2D)
    result = sequentialize(m)
    node = result.graphs["main"].nodes[0]
    assert node.replication == ()
    body = result.functions["k"].body
    loops = [s for s in walk(body) if isinstance(s, For)]
    assert [loop.var for loop in loops] == ["instance0", "instance1"]
    assert not any(isinstance(s, (InstanceId, InstanceCount)) for s in walk(body))
    assert_same_results(m, result)


def test_instance_count_reads_the_replication_size():
    m = kernel_module("""
        b[instance_id(0), instance_id(1)] = f32(instance_count(0) * 10 + instance_count(1))
    """)
    result = sequentialize(m)
    assert_same_results(m, result)


def test_replication_using_scalar_parameters_and_expressions():
    m = kernel_module("""
        b[instance_id(0), instance_id(0) % W] = f32(instance_id(0)) + f32(instance_count(0))
    """, replication="i64(n) + H - 2")
    for n in (1, 2):
        assert_same_results(m, sequentialize(m), n)


def test_early_return_continues_with_the_next_instance():
    m = kernel_module("""
        if a[instance_id(0), instance_id(1)] < f32(0.0) {
          b[instance_id(0), instance_id(1)] = f32(-1.0)
          return
        }
        for i in 0 .. 3 step 1 {
          if i64(n) == i {
            return
          }
          b[instance_id(0), instance_id(1)] = b[instance_id(0), instance_id(1)] + f32(1.0)
        }
    """)
    result = sequentialize(m)
    for n in (0, 1, 5):
        assert_same_results(m, result, n)


def test_local_arrays_become_private_per_instance():
    m = kernel_module("""
        local t: f32[1]
        t[0] = t[0] + a[instance_id(0), instance_id(1)]
        b[instance_id(0), instance_id(1)] = t[0]
    """)
    result = sequentialize(m)
    decls = [s for s in walk(result.functions["k"].body) if isinstance(s, ArrayDecl)]
    assert [d.space for d in decls] == ["private"]


def test_group_attribute_is_dropped():
    m = kernel_module(COPY_2D, attributes=" {group = [1, 2]}")
    node = sequentialize(m).graphs["main"].nodes[0]
    assert "group" not in node.attributes


def test_barrier_is_refused():
    m = kernel_module("""
        barrier
        b[instance_id(0), instance_id(1)] = f32(1.0)
    """)
    with pytest.raises(PassError, match="barrier") as info:
        run_pipeline(m, "sequentialize")
    assert info.value.diagnostics[0].location.node == "k"


def test_helpers_reading_the_instance_need_inlining_first():
    helpers = """
    func @row() -> i64 {
      return instance_id(0)
    }
    """
    m = kernel_module("b[@row(), instance_id(1)] = f32(1.0)", helpers=helpers)
    with pytest.raises(PassError, match="run the 'inline' pass before 'sequentialize'"):
        run_pipeline(m, "sequentialize")
    result = run_pipeline(m, "inline,sequentialize", verify_each=True)
    assert_same_results(m, result)


SHARED = """hpvm 1.0
module t

func @scale(in a: f32[N], out b: f32[N]) {
  b[instance_id(0)] = a[instance_id(0)] * f32(instance_count(0))
}

graph @main(in x: f32[N], out y: f32[N], out z: f32[N], out w: f32[N]) {
  node full = @scale [N]
  node half = @scale [N / 2]
  node half2 = @scale [N / 2]
  in x -> full.a
  in x -> half.a
  in x -> half2.a
  out full.b -> y
  out half.b -> z
  out half2.b -> w
}

root @main
"""


def run_shared(module):
    return run_module(module, {"x": np.arange(6, dtype=np.float32)})


def test_shared_function_is_cloned_per_replication():
    m = parse_module(SHARED)
    result = sequentialize(m)
    bodies = {n.name: n.body.function for n in result.graphs["main"].nodes}
    assert bodies["half"] == bodies["half2"] != bodies["full"]
    assert set(bodies.values()) == {"scale_seq", "scale_seq_1"}
    assert "scale" not in result.functions or result.functions["scale"] == m.functions["scale"]
    for name, value in run_shared(m).items():
        np.testing.assert_array_equal(value, run_shared(result)[name])


def test_nodes_option_selects_the_nodes():
    m = parse_module(SHARED)
    result = sequentialize(m, "{nodes=main.half,half2}")
    nodes = {n.name: n for n in result.graphs["main"].nodes}
    assert nodes["full"].replication and nodes["full"].body.function == "scale"
    assert nodes["half"].body.function == nodes["half2"].body.function == "scale_seq"
    assert result.functions["scale"] == m.functions["scale"]
    for name, value in run_shared(m).items():
        np.testing.assert_array_equal(value, run_shared(result)[name])


def test_sole_user_is_rewritten_in_place():
    m = kernel_module(COPY_2D)
    assert list(sequentialize(m).functions) == ["k"]


def test_unknown_node_is_reported_with_the_known_ones():
    m = parse_module(SHARED)
    with pytest.raises(PassError, match="no node named 'hlf'") as info:
        run_pipeline(m, "sequentialize{nodes=hlf}")
    assert "main.half" in str(info.value)


def test_sequentialize_does_not_mutate_its_input():
    m = parse_module(SHARED)
    before = repr(m)
    sequentialize(m)
    assert repr(m) == before


PRIVATE = """hpvm 1.0
module t

func @k(private p: f32[SHAPE], in a: f32[N], out b: f32[N]) {
  p[0, 1] = p[0, 1] + a[instance_id(0)]
  b[instance_id(0)] = p[0, 1]
}

graph @main(in p: f32[SHAPE], in a: f32[N], out b: f32[N]) {
  node k = @k [N]
  in p -> k.p
  in a -> k.a
  out k.b -> b
}

root @main
"""


def test_written_private_buffers_are_copied_per_instance():
    m = parse_module(PRIVATE.replace("SHAPE", "2, 3"))
    result = sequentialize(m)
    inputs = {"p": np.ones((2, 3), np.float32), "a": np.arange(4, dtype=np.float32)}
    np.testing.assert_array_equal(run_module(result, inputs)["b"], [1, 2, 3, 4])
    np.testing.assert_array_equal(run_module(m, inputs)["b"], [1, 2, 3, 4])


def test_written_private_buffer_of_symbolic_size_is_refused():
    m = parse_module(PRIVATE.replace("SHAPE", "2, M"))
    with pytest.raises(PassError, match="needs its own copy") as info:
        run_pipeline(m, "sequentialize")
    assert info.value.diagnostics[0].location.port == "p"


def test_instance_loops_are_marked_ivdep():
    result = sequentialize(kernel_module(COPY_2D))
    loops = [s for s in walk(result.functions["k"].body) if isinstance(s, For)]
    assert [loop.ivdep for loop in loops] == [True, True]


@pytest.mark.parametrize("statement", [
    "atomic_add b[0, 0], f32(1.0)",
    "private t: f32[4]\n  t[0] = a[instance_id(0), instance_id(1)]\n  b[0, 0] = t[0]",
], ids=["atomics", "arrays"])
def test_instance_loops_sharing_memory_are_not_marked_ivdep(statement):
    result = sequentialize(kernel_module(statement))
    loops = [s for s in walk(result.functions["k"].body) if isinstance(s, For)
             and s.var.startswith("instance")]
    assert loops and not any(loop.ivdep for loop in loops)
