"""dce: dead nodes, unreachable graphs/functions, dead kernel code."""
import textwrap

import numpy as np

from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_stmts
from hpvm.ir.verify import verify
from hpvm.passes import run_pipeline

COPY = """
func @copy(in a: f32[N], out b: f32[N]) {
  b[instance_id(0)] = a[instance_id(0)] + f32(1.0)
}
"""


def module(text: str):
    return parse_module("hpvm 1.0\nmodule t\n" + textwrap.dedent(text))


def body(module, function: str) -> str:
    return print_stmts(module.functions[function].body)


def dce(m):
    result = run_pipeline(m, "dce", verify_each=True)
    verify(result)
    return result


GRAPH = COPY + """
graph @main(in x: f32[N], out y: f32[N], out z: f32[N]) {
  node live1 = @copy [N]
  node live2 = @copy [N]
  node dead1 = @copy [N]
  node dead2 = @copy [N]
  edge live1.b -> live2.a all-to-all
  edge live1.b -> dead1.a all-to-all
  edge dead1.b -> dead2.a all-to-all
  in x -> live1.a
  out live2.b -> y
  out live1.b -> z
}
root @main
"""


def test_nodes_reaching_no_output_are_removed():
    result = dce(module(GRAPH))
    graph = result.graphs["main"]
    assert [n.name for n in graph.nodes] == ["live1", "live2"]
    assert [(e.src_node, e.dst_node) for e in graph.edges] == [("live1", "live2")]


def test_bindings_of_removed_nodes_are_removed():
    text = GRAPH.replace("edge dead1.b -> dead2.a all-to-all", "in x -> dead2.a")
    graph = dce(module(text)).graphs["main"]
    assert [(b.param, b.dst_node) for b in graph.bind_ins] == [("x", "live1")]
    assert [b.src_node for b in graph.bind_outs] == ["live2", "live1"]


def test_producers_of_live_nodes_stay_live_transitively():
    text = COPY + """
    graph @main(in x: f32[N], out y: f32[N]) {
      node a = @copy [N]
      node b = @copy [N]
      node c = @copy [N]
      edge a.b -> b.a all-to-all
      edge b.b -> c.a all-to-all
      in x -> a.a
      out c.b -> y
    }
    root @main
    """
    m = module(text)
    assert dce(m).graphs["main"] == m.graphs["main"]


def test_unreachable_functions_and_graphs_are_removed():
    text = COPY + """
    func @unused(in a: f32[N], out b: f32[N]) {
      b[0] = f32(0.0)
    }
    graph @inner(in x: f32[N], out y: f32[N]) {
      node c = @copy [N]
      in x -> c.a
      out c.b -> y
    }
    graph @orphan(in x: f32[N], out y: f32[N]) {
      node c = @unused [N]
      in x -> c.a
      out c.b -> y
    }
    graph @main(in x: f32[N], out y: f32[N]) {
      node sub = graph @inner
      in x -> sub.x
      out sub.y -> y
    }
    root @main
    """
    result = dce(module(text))
    assert list(result.graphs) == ["inner", "main"]
    assert list(result.functions) == ["copy"]


def test_functions_called_from_live_kernels_are_kept():
    text = """
    func @twice(in v: f32) -> f32 {
      return v * f32(2.0)
    }
    func @k(in a: f32[N], out b: f32[N]) {
      b[instance_id(0)] = @twice(a[instance_id(0)])
    }
    graph @main(in x: f32[N], out y: f32[N]) {
      node n = @k [N]
      in x -> n.a
      out n.b -> y
    }
    root @main
    """
    assert list(dce(module(text)).functions) == ["twice", "k"]


KERNEL = """
func @side(inout a: f32[N]) -> f32 {
  a[0] = f32(5.0)
  return f32(1.0)
}
func @k(inout a: f32[N], out b: f32[N]) {
  BODY
}
graph @main(in x: f32[N], out x2: f32[N], out y: f32[N]) {
  node n = @k [N]
  in x -> n.a
  out n.a -> x2
  out n.b -> y
}
root @main
"""


def kernel_module(statements: str):
    lines = textwrap.dedent(statements).strip().splitlines()
    return module(KERNEL.replace("BODY", "\n  ".join(lines)))


def test_unread_pure_lets_are_removed_transitively():
    m = kernel_module("""
        let t: f32 = a[instance_id(0)]
        let u: f32 = t * f32(2.0)
        let v: f32 = a[instance_id(0)]
        b[instance_id(0)] = v
    """)
    assert body(dce(m), "k") == "let v: f32 = a[instance_id(0)]\nb[instance_id(0)] = v"


def test_lets_with_calls_are_kept():
    m = kernel_module("""
        let t: f32 = @side(a)
        b[instance_id(0)] = f32(0.0)
    """)
    assert "let t: f32 = @side(a)" in body(dce(m), "k")


def test_assignments_to_dead_variables_are_removed():
    m = kernel_module("""
        let t: f32
        t = a[instance_id(0)]
        b[instance_id(0)] = f32(0.0)
    """)
    assert body(dce(m), "k") == "b[instance_id(0)] = f32(0.0)"


def test_variables_receiving_atomic_results_are_kept():
    m = kernel_module("""
        let old: f32
        atomic_add a[0], f32(1.0) -> old
    """)
    assert body(dce(m), "k").startswith("let old: f32")


def test_statements_after_return_are_removed():
    m = kernel_module("""
        if instance_id(0) == 0 {
          return
          b[0] = f32(1.0)
        }
        b[instance_id(0)] = f32(2.0)
    """)
    assert body(dce(m), "k") == textwrap.dedent("""\
        if instance_id(0) == 0 {
          return
        }
        b[instance_id(0)] = f32(2.0)""")


def test_empty_if_and_for_are_removed():
    m = kernel_module("""
        let t: f32 = a[0]
        if a[0] > f32(0.0) {
          t = f32(1.0)
        }
        for i in 0 .. N step 1 {
          t = a[i]
        }
        b[instance_id(0)] = f32(2.0)
    """)
    assert body(dce(m), "k") == "b[instance_id(0)] = f32(2.0)"


def test_dce_preserves_results():
    m = kernel_module("""
        let t: f32 = a[instance_id(0)] * f32(3.0)
        let unused: f32 = t + f32(1.0)
        let s: f32 = @side(a)
        if t > f32(4.0) {
          b[instance_id(0)] = t
          return
          b[instance_id(0)] = f32(9.0)
        }
        b[instance_id(0)] = s
    """)
    x = np.arange(6, dtype=np.float32)
    before = run_module(m, {"x": x})
    after = run_module(dce(m), {"x": x})
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_dce_does_not_mutate_its_input():
    m = module(GRAPH)
    text_before = repr(m)
    dce(m)
    assert repr(m) == text_before
