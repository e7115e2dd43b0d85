"""Graph- and node-level rules of the verifier (hpvm.ir.verify).

Each test starts from a correct module built with the Python IR API (a
two-node blur and a nested matmul), breaks one rule, and checks that a
diagnostic names the place and says how to fix it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from hpvm.errors import Location, VerificationError
from hpvm.ir import (
    F32, F64, I32, I64, BindIn, BindOut, Binary, BufferType, Call, Const,
    ConstantBody, Edge, For, Graph, GraphBody, If, InstanceId, KernelBody,
    KernelFunction, Let, Load, Module, Node, Parameter, Return, Store,
    Var, Assign,
)
from hpvm.ir.testing import modules
from hpvm.ir.verify import check, verify

IMAGE = BufferType(F32, ("H", "W"))
SIZE_H, SIZE_W = Var("H", I64), Var("W", I64)


# -- the correct module ---------------------------------------------------
def blur_function() -> KernelFunction:
    """dst[i, j] = sum of src[i, j-1 .. j+1] (inside the row) / 3."""
    i, j = InstanceId(0), InstanceId(1)
    column = Var("column", I64)
    inside = Binary("land", column.ge(0), column.lt(SIZE_W))
    accumulate = Assign("total", Var("total", F32) + Load("src", (i, column), F32))
    body = (
        Let("total", F32, Const(0.0, F32)),
        For("k", Const(-1, I64), Const(2, I64), 1, (
            Let("column", I64, j + Var("k", I64)),
            If(inside, (accumulate,)),
        )),
        Store("dst", (i, j), Var("total", F32) / 3.0),
    )
    params = (Parameter("src", IMAGE, "in"), Parameter("dst", IMAGE, "out"))
    return KernelFunction("blur", params, body)


def scale_function() -> KernelFunction:
    """data[flat i] *= factor, in place (replicate by R * S)."""
    i = InstanceId(0)
    params = (Parameter("data", BufferType(F32, ("R", "S")), "inout"),
              Parameter("factor", F32, "in"))
    body = (Store("data", (i,), Load("data", (i,), F32) * Var("factor", F32)),)
    return KernelFunction("scale", params, body)


def matmul_functions() -> tuple[KernelFunction, KernelFunction]:
    """C = A @ B, one instance per element, through a helper ``madd``."""
    a, b, acc = Var("a", F32), Var("b", F32), Var("acc", F32)
    madd = KernelFunction(
        "madd", (Parameter("acc", F32), Parameter("a", F32), Parameter("b", F32)),
        (Return(acc + a * b),), F32)
    i, j, k = InstanceId(0), InstanceId(1), Var("k", I64)
    step = Call("madd", (acc, Load("A", (i, k), F32), Load("B", (k, j), F32)), F32)
    body = (
        Let("acc", F32, Const(0.0, F32)),
        For("k", Const(0, I64), Var("K", I64), 1, (Assign("acc", step),), unroll=4),
        Store("C", (i, j), acc),
    )
    params = (Parameter("A", BufferType(F32, ("M", "K"))),
              Parameter("B", BufferType(F32, ("K", "N"))),
              Parameter("C", BufferType(F32, ("M", "N")), "out"))
    return KernelFunction("matmul", params, body), madd


def blur_graph() -> Graph:
    replication = (SIZE_H, SIZE_W)
    return Graph(
        "blur2", (Parameter("img", IMAGE), Parameter("out", IMAGE, "out")),
        nodes=(Node("blur_x", KernelBody("blur"), replication),
               Node("blur_y", KernelBody("blur"), replication)),
        edges=(Edge("blur_x", "dst", "blur_y", "src", "one-to-one"),),
        bind_ins=(BindIn("img", "blur_x", "src"),),
        bind_outs=(BindOut("blur_y", "dst", "out"),))


def matmul_graph() -> Graph:
    params = (Parameter("A", BufferType(F32, ("M", "K"))),
              Parameter("B", BufferType(F32, ("K", "N"))),
              Parameter("C", BufferType(F32, ("M", "N")), "out"))
    node = Node("matmul", KernelBody("matmul"), (Var("M", I64), Var("N", I64)),
                hint="cpu", attributes={"group": (8, 8)})
    return Graph("mm", params, (node,),
                 bind_ins=(BindIn("A", "matmul", "A"), BindIn("B", "matmul", "B")),
                 bind_outs=(BindOut("matmul", "C", "C"),))


def root_graph() -> Graph:
    params = (Parameter("img", IMAGE), Parameter("smooth", IMAGE, "out"),
              Parameter("A", BufferType(F32, ("M", 4))),
              Parameter("C", BufferType(F32, ("M", 3)), "out"),
              Parameter("factor", F32))
    weights = np.ones((4, 3), dtype=np.float32)
    nodes = (
        Node("smooth", GraphBody("blur2")),
        Node("weights", ConstantBody(BufferType(F32, (4, 3)), weights)),
        Node("product", GraphBody("mm")),
        Node("scale", KernelBody("scale"), (Var("R", I64) * Var("S", I64),)),
    )
    return Graph(
        "main", params, nodes,
        edges=(Edge("weights", "value", "product", "B"),
               Edge("product", "C", "scale", "data")),
        bind_ins=(BindIn("img", "smooth", "img"), BindIn("A", "product", "A"),
                  BindIn("factor", "scale", "factor")),
        bind_outs=(BindOut("smooth", "out", "smooth"),
                   BindOut("scale", "data", "C")))


def good_module() -> Module:
    matmul, madd = matmul_functions()
    functions = {f.name: f for f in (blur_function(), scale_function(), matmul, madd)}
    graphs = {g.name: g for g in (root_graph(), blur_graph(), matmul_graph())}
    return Module("demo", functions, graphs, "main")


# -- helpers -----------------------------------------------------------------
def with_graph(module: Module, graph: Graph) -> Module:
    return replace(module, graphs={**module.graphs, graph.name: graph})


def with_function(module: Module, function: KernelFunction) -> Module:
    return replace(module, functions={**module.functions, function.name: function})


def find(module: Module, *fragments: str):
    """The diagnostics whose text contains every fragment (at least one)."""
    diagnostics = check(module)
    found = [d for d in diagnostics if all(f in str(d) for f in fragments)]
    assert found, f"no diagnostic with {fragments}; got:\n" + "\n".join(
        str(d) for d in diagnostics)
    return found


def blur_with(**changes) -> Module:
    return with_graph(good_module(), replace(blur_graph(), **changes))


# -- the correct module and the API -----------------------------------------
def test_blur_and_matmul_module_verifies_clean():
    assert check(good_module()) == []
    verify(good_module())


def test_verify_raises_with_all_diagnostics():
    graph = replace(blur_graph(), bind_ins=(), bind_outs=())
    with pytest.raises(VerificationError) as caught:
        verify(with_graph(good_module(), graph))
    messages = [str(d) for d in caught.value.diagnostics]
    assert any("'src' is not connected" in m for m in messages)
    assert any("'out' is never produced" in m for m in messages)


def test_diagnostic_carries_location_and_fix():
    graph = replace(blur_graph(), bind_ins=())
    (diagnostic,) = find(with_graph(good_module(), graph), "not connected")
    assert diagnostic.location == Location(graph="blur2", node="blur_x", port="src")
    assert "blur_x.src" in diagnostic.fix


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(modules(decorations=True))
def test_generated_valid_modules_verify_clean(module):
    assert check(module) == []


def test_non_module_is_reported():
    assert "expected a Module" in str(check("not a module")[0])


# -- module structure --------------------------------------------------------
def test_missing_root_graph():
    find(replace(good_module(), root="nope"), "root graph '@nope' is not defined")


def test_node_running_unknown_function():
    node = Node("blur_x", KernelBody("blurr"), (SIZE_H, SIZE_W))
    graph = replace(blur_graph(), nodes=(node, blur_graph().nodes[1]))
    find(with_graph(good_module(), graph), "node 'blur_x'", "unknown function '@blurr'")


def test_node_containing_unknown_graph():
    root = replace(root_graph(), nodes=(Node("smooth", GraphBody("blur3")),)
                   + root_graph().nodes[1:])
    find(with_graph(good_module(), root), "node 'smooth'", "unknown graph '@blur3'")


def test_duplicate_node_names():
    nodes = blur_graph().nodes
    find(blur_with(nodes=nodes + (nodes[0],)), "two nodes are named 'blur_x'")


def test_graph_containing_itself():
    inner = replace(blur_graph(), nodes=blur_graph().nodes + (
        Node("again", GraphBody("blur2")),))
    find(with_graph(good_module(), inner), "graph '@blur2' contains itself")


def test_graphs_containing_each_other():
    module = good_module()
    mm = replace(matmul_graph(), nodes=matmul_graph().nodes + (
        Node("loop", GraphBody("blur2")),))
    blur = replace(blur_graph(), nodes=blur_graph().nodes + (
        Node("loop", GraphBody("mm")),))
    find(with_graph(with_graph(module, mm), blur), "contains itself",
         "'@blur2' -> '@mm' -> '@blur2'")


# -- edges and bindings: endpoints ------------------------------------------
def test_edge_naming_missing_node():
    edge = Edge("blur_z", "dst", "blur_y", "src")
    find(blur_with(edges=(edge,)), "edge blur_z.dst -> blur_y.src",
         "unknown node 'blur_z'")


def test_edge_naming_missing_port():
    edge = Edge("blur_x", "out", "blur_y", "src")
    find(blur_with(edges=(edge,)), "node 'blur_x' has no port 'out'", "'dst'")


def test_bind_in_naming_missing_graph_param():
    find(blur_with(bind_ins=(BindIn("image", "blur_x", "src"),)),
         "unknown parameter 'image'", "'img'")


def test_bind_out_naming_missing_node():
    find(blur_with(bind_outs=(BindOut("blur_q", "dst", "out"),)),
         "unknown node 'blur_q'")


# -- edges and bindings: types ----------------------------------------------
def _retyped_blur(type_of_y_src: BufferType) -> Module:
    """blur_y runs a copy of blur whose src has another type."""
    function = blur_function()
    other = replace(function, name="blur_other", params=(
        Parameter("src", type_of_y_src), Parameter("dst", IMAGE, "out")))
    nodes = (blur_graph().nodes[0],
             Node("blur_y", KernelBody("blur_other"), (SIZE_H, SIZE_W)))
    return with_function(blur_with(nodes=nodes), other)


def test_edge_element_type_mismatch():
    find(_retyped_blur(BufferType(F64, ("H", "W"))), "edge blur_x.dst -> blur_y.src",
         "element type f32 differs from f64")


def test_edge_rank_mismatch():
    find(_retyped_blur(BufferType(F32, ("H", "W", "C"))), "rank 2 differs from rank 3")


def test_edge_fixed_dims_mismatch():
    module = _retyped_blur(BufferType(F32, (4, "W")))
    source = replace(module.functions["blur"], params=(
        Parameter("src", BufferType(F32, (8, "W"))),
        Parameter("dst", BufferType(F32, (8, "W")), "out")))
    find(with_function(module, source), "dimension 0 is 8 on one side and 4")


def test_unshaped_buffer_matches_any_shape_of_same_element():
    module = _retyped_blur(BufferType(F32))
    assert not [d for d in check(module) if "does not match" in str(d)]


def test_bind_in_type_mismatch():
    graph = replace(blur_graph(), params=(
        Parameter("img", BufferType(I32, ("H", "W"))), Parameter("out", IMAGE, "out")))
    find(with_graph(good_module(), graph), "binding in 'img' -> blur_x.src",
         "element type i32 differs from f32")


# -- edges and bindings: directions -----------------------------------------
def test_edge_out_of_an_input_port():
    edge = Edge("blur_x", "src", "blur_y", "src")
    find(blur_with(edges=(edge,)), "starts at 'src' of node 'blur_x'", "not an output")


def test_edge_into_an_output_port():
    edges = blur_graph().edges + (Edge("blur_x", "dst", "blur_y", "dst"),)
    find(blur_with(edges=edges), "ends at 'dst' of node 'blur_y'", "not an input")


def test_bind_in_from_graph_output_param():
    bind_ins = blur_graph().bind_ins + (BindIn("out", "blur_y", "src"),)
    find(blur_with(bind_ins=bind_ins, edges=()), "reads graph parameter 'out'",
         "BindOut")


def test_bind_out_into_graph_input_param():
    bind_outs = blur_graph().bind_outs + (BindOut("blur_x", "dst", "img"),)
    find(blur_with(bind_outs=bind_outs), "writes graph parameter 'img'", "BindIn")


def test_inout_port_can_be_source_and_destination():
    # scale.data is inout: fed by an edge and bound out (good_module)
    assert check(good_module()) == []


# -- producers ----------------------------------------------------------------
def test_unbound_input_port():
    (diagnostic,) = find(blur_with(bind_ins=()), "input 'src' is not connected")
    assert diagnostic.location.node == "blur_x"


def test_input_fed_twice():
    bind_ins = blur_graph().bind_ins + (BindIn("img", "blur_y", "src"),)
    find(blur_with(bind_ins=bind_ins), "input 'src' of node 'blur_y'",
         "written by two producers")


def test_graph_output_written_by_two_nodes():
    bind_outs = blur_graph().bind_outs + (BindOut("blur_x", "dst", "out"),)
    find(blur_with(bind_outs=bind_outs), "output 'out' is written by two nodes",
         "'blur_x'", "'blur_y'")


def test_graph_output_never_produced():
    (diagnostic,) = find(blur_with(bind_outs=()), "output 'out' is never produced")
    assert diagnostic.location.port == "out"


def test_cycle_among_nodes_names_them():
    edges = blur_graph().edges + (Edge("blur_y", "dst", "blur_x", "src", "one-to-one"),)
    bind_ins = ()
    find(blur_with(edges=edges, bind_ins=bind_ins), "form a cycle",
         "'blur_x' -> 'blur_y' -> 'blur_x'")


def test_edge_carrying_a_scalar():
    module = good_module()
    producer = KernelFunction("make_n", (Parameter("n", I64, "out"),), ())
    root = replace(root_graph(),
                   nodes=root_graph().nodes + (Node("maker", KernelBody("make_n")),),
                   edges=root_graph().edges + (Edge("maker", "n", "scale", "factor"),))
    find(with_graph(with_function(module, producer), root),
         "edge maker.n -> scale.factor carries scalar", "BindIn")


def test_scalar_port_with_direction_other_than_in():
    producer = KernelFunction("make_n", (Parameter("n", I64, "out"),), ())
    find(with_function(good_module(), producer), "function '@make_n'",
         "scalar parameter 'n' has direction 'out'")


def test_unknown_edge_kind():
    edge = replace(blur_graph().edges[0], kind="one-to-many")
    find(blur_with(edges=(edge,)), "unknown kind 'one-to-many'")


def test_one_to_one_edge_between_different_replications():
    nodes = (blur_graph().nodes[0],
             replace(blur_graph().nodes[1], replication=(SIZE_H,)))
    find(blur_with(nodes=nodes), "one-to-one edge blur_x.dst -> blur_y.src",
         "different replication")


def test_streaming_bind_out_needs_streaming_bind_in():
    bind_outs = (replace(blur_graph().bind_outs[0], streaming=True),)
    find(blur_with(bind_outs=bind_outs), "streaming output 'out'",
         "needs a streaming input")


def test_streaming_pipeline_verifies():
    module = blur_with(
        bind_ins=(replace(blur_graph().bind_ins[0], streaming=True),),
        bind_outs=(replace(blur_graph().bind_outs[0], streaming=True),))
    assert check(module) == []


# -- node shapes and replication -----------------------------------------------
def test_out_port_shape_with_undeterminable_symbol():
    function = replace(blur_function(), params=(
        Parameter("src", IMAGE), Parameter("dst", BufferType(F32, ("H", "C")), "out")))
    find(with_function(good_module(), function), "output 'dst'",
         "'C' cannot be determined")


def test_out_shape_symbol_from_integer_scalar_port_is_fine():
    function = replace(blur_function(), params=(
        Parameter("src", IMAGE), Parameter("dst", BufferType(F32, ("H", "C")), "out"),
        Parameter("C", I64)))
    diagnostics = check(with_function(good_module(), function))
    assert not [d for d in diagnostics if "cannot be determined" in str(d)]


def test_graph_out_param_shape_with_undeterminable_symbol():
    graph = replace(blur_graph(), params=(
        Parameter("img", IMAGE), Parameter("out", BufferType(F32, ("Q",)), "out")))
    find(with_graph(good_module(), graph), "graph '@blur2'", "'Q' cannot be determined")


def test_replication_with_more_than_three_dims():
    node = replace(blur_graph().nodes[0], replication=(SIZE_H, SIZE_W, SIZE_H, SIZE_W))
    find(blur_with(nodes=(node, blur_graph().nodes[1])), "node 'blur_x'",
         "replicated in 4 dims")


def test_replication_on_a_non_kernel_node():
    nodes = (replace(root_graph().nodes[0], replication=(Const(2, I64),)),)
    root = replace(root_graph(), nodes=nodes + root_graph().nodes[1:])
    find(with_graph(good_module(), root), "node 'smooth' is replicated but is not a kernel")


def test_replication_using_name_outside_node_scope():
    node = replace(blur_graph().nodes[0], replication=(Var("M", I64), SIZE_W))
    find(blur_with(nodes=(node, blur_graph().nodes[1])), "node 'blur_x'",
         "uses 'M'", "'H', 'W'")


def test_replication_with_non_integer_type():
    node = replace(blur_graph().nodes[0], replication=(Const(2.0, F32), SIZE_W))
    find(blur_with(nodes=(node, blur_graph().nodes[1])), "replication dim 0",
         "type f32")


def test_replication_may_use_integer_scalar_port():
    function = replace(scale_function(), params=scale_function().params + (
        Parameter("count", I64),))
    root = replace(root_graph(), nodes=root_graph().nodes[:3] + (
        Node("scale", KernelBody("scale"), (Var("count", I64),)),),
        params=root_graph().params + (Parameter("count", I64),),
        bind_ins=root_graph().bind_ins + (BindIn("count", "scale", "count"),))
    assert check(with_graph(with_function(good_module(), function), root)) == []


def test_instance_id_dim_beyond_replication_rank():
    node = replace(blur_graph().nodes[0], replication=(SIZE_H,))
    nodes = (node, replace(blur_graph().nodes[1], replication=(SIZE_H,)))
    (diagnostic,) = find(blur_with(nodes=nodes), "node 'blur_x'", "dim 1",
                         "replicated in 1 dim")
    assert diagnostic.location.function == "blur"


def test_instance_id_in_helper_counts_for_the_node():
    helper = KernelFunction("row", (), (Return(InstanceId(2)),), I64)
    caller = replace(scale_function(), body=scale_function().body + (
        Let("r", I64, Call("row", (), I64)),))
    find(with_function(with_function(good_module(), helper), caller),
         "node 'scale'", "dim 2")


# -- node bodies and attributes ----------------------------------------------
def test_constant_data_dtype_disagrees_with_type():
    body = ConstantBody(BufferType(F32, (4, 3)), np.ones((4, 3)))
    root = replace(root_graph(), nodes=(root_graph().nodes[0], Node("weights", body))
                   + root_graph().nodes[2:])
    find(with_graph(good_module(), root), "constant node 'weights'", "float64",
         "astype")


def test_constant_data_shape_disagrees_with_type():
    body = ConstantBody(BufferType(F32, (4, 3)), np.ones((3, 4), dtype=np.float32))
    root = replace(root_graph(), nodes=(root_graph().nodes[0], Node("weights", body))
                   + root_graph().nodes[2:])
    find(with_graph(good_module(), root), "constant node 'weights'", "shape (3, 4)")


def test_node_attribute_of_unsupported_type():
    node = replace(blur_graph().nodes[0], attributes={"tile": [4, 4]})
    find(blur_with(nodes=(node, blur_graph().nodes[1])), "node 'blur_x'",
         "attribute 'tile'", "tuple()")


def test_group_attribute_needs_one_size_per_replication_dim():
    node = replace(blur_graph().nodes[0], attributes={"group": (8,)})
    find(blur_with(nodes=(node, blur_graph().nodes[1])), "attribute 'group'")


def test_node_kernel_returning_a_value():
    function = replace(scale_function(), body=(Return(Const(1, I32)),),
                       return_type=I32)
    find(with_function(good_module(), function), "node kernel '@scale' returns a value")
