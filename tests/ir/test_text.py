"""The .hpvm text form: printing and parsing of expressions, literals,
names, statements, nodes, attributes and the version header."""
import math
import textwrap

import numpy as np
import pytest

from hpvm.ir import (
    BOOL, F16, F32, F64, I8, I32, I64, U8, U64, ArrayDecl, Assign, AtomicUpdate,
    Barrier, BindIn, BindOut, Binary, BufferType, Call, Cast, Compare, Const,
    ConstantBody, Edge, ExprStmt, For, Graph, GraphBody, If, InstanceCount,
    InstanceId, Intrinsic, KernelBody, KernelFunction, Let, Load, Module, Node,
    Parameter, Return, Select, Store, TensorBody, Unary, Var, While,
)
from hpvm.errors import HpvmError
from hpvm.ir.text import parse_module, print_expr, print_module, print_stmts

A, B, C = Var("a", I64), Var("b", I64), Var("c", I64)
P, Q = Var("p", BOOL), Var("q", BOOL)
X = Var("x", F32)
PARAMS = (Parameter("a", I64), Parameter("b", I64), Parameter("c", I64),
          Parameter("p", BOOL), Parameter("q", BOOL), Parameter("x", F32),
          Parameter("buf", BufferType(F32, ("H", "W"))),
          Parameter("hist", BufferType(I32, (16,)), "inout"))


def module_of(body, params=PARAMS, functions=()) -> Module:
    kernel = KernelFunction("k", params, tuple(body))
    table = {f.name: f for f in (kernel, *functions)}
    return Module("t", table, {"main": Graph("main", ())}, "main")


def roundtrip(module: Module) -> str:
    """Print, parse back, check equality and the fixed point; the text."""
    text = print_module(module)
    again = parse_module(text)
    assert again == module
    assert print_module(again) == text
    return text


def expr_roundtrip(expr) -> str:
    roundtrip(module_of([Let("r", expr.type, expr)]))
    return print_expr(expr)


def body_text(body_source: str, params="in a: i64, in x: f32, inout buf: f32[8]") -> tuple:
    text = (f"hpvm 1.0\nmodule t\n\nfunc @k({params}) {{\n"
            f"{textwrap.indent(textwrap.dedent(body_source).strip(), '  ')}\n}}\n\n"
            "graph @main() {}\n\nroot @main\n")
    return parse_module(text).functions["k"].body


# ------------------------------------------------------------ precedence

@pytest.mark.parametrize("expr, text", [
    (Binary("sub", A, Binary("sub", B, C)), "a - (b - c)"),
    (Binary("sub", Binary("sub", A, B), C), "a - b - c"),
    (Binary("mul", Binary("add", A, B), C), "(a + b) * c"),
    (Binary("add", A, Binary("mul", B, C)), "a + b * c"),
    (Binary("div", A, Binary("div", B, C)), "a / (b / c)"),
    (Binary("shl", A, Binary("add", B, C)), "a << b + c"),
    (Binary("and", Binary("or", A, B), C), "(a | b) & c"),
    (Binary("xor", A, Binary("and", B, C)), "a ^ b & c"),
    (Unary("neg", Binary("mul", A, B)), "-(a * b)"),
    (Binary("mul", Unary("neg", A), B), "-a * b"),
    (Unary("neg", Unary("neg", A)), "-(-a)"),
    (Unary("bitnot", Unary("neg", A)), "~-a"),
    (Unary("not", Binary("land", P, Q)), "!(p && q)"),
    (Binary("lor", P, Binary("land", Q, P)), "p || q && p"),
    (Binary("land", Binary("lor", P, Q), P), "(p || q) && p"),
    (Binary("land", Compare("lt", A, B), Compare("ge", B, C)), "a < b && b >= c"),
    (Compare("eq", Compare("lt", A, B), P), "a < b == p"),
    (Compare("lt", A, Binary("add", B, Const(1, I64))), "a < b + 1"),
    (Binary("sub", A, Const(-1, I64)), "a - -1"),
])
def test_printer_adds_only_needed_parentheses_and_parser_rebuilds_tree(expr, text):
    assert expr_roundtrip(expr) == text


def test_redundant_parentheses_in_input_are_dropped_on_printing():
    body = body_text("let r: i64 = ((a + 1)) * (2)")
    assert print_stmts(body) == "let r: i64 = (a + 1) * 2"


# -------------------------------------------------------------- literals

@pytest.mark.parametrize("const, text", [
    (Const(True, BOOL), "true"),
    (Const(False, BOOL), "false"),
    (Const(3, I64), "3"),
    (Const(-1, I64), "-1"),
    (Const(-2**63, I64), "-9223372036854775808"),
    (Const(0.5, F64), "0.5"),
    (Const(-0.0, F64), "-0.0"),
    (Const(1e-8, F64), "1e-08"),
    (Const(2.0, F64), "2.0"),
    (Const(1e300, F64), "1e+300"),
    (Const(math.inf, F64), "f64(inf)"),
    (Const(0.5, F32), "f32(0.5)"),
    (Const(0.1, F32), "f32(0.1)"),
    (Const(-0.0, F32), "f32(-0.0)"),
    (Const(math.inf, F32), "f32(inf)"),
    (Const(-math.inf, F32), "f32(-inf)"),
    (Const(65504.0, F16), "f16(65500.0)"),
    (Const(7, I32), "i32(7)"),
    (Const(-128, I8), "i8(-128)"),
    (Const(255, U8), "u8(255)"),
    (Const(2**64 - 1, U64), "u64(18446744073709551615)"),
])
def test_constant_prints_canonically_and_round_trips(const, text):
    assert expr_roundtrip(const) == text


def test_negative_zero_keeps_its_sign():
    (let,) = body_text("let r: f32 = f32(-0.0)")
    assert math.copysign(1.0, let.value.value) == -1.0


def test_nan_prints_and_parses_as_nan():
    assert print_expr(Const(math.nan, F32)) == "f32(nan)"
    (let,) = body_text("let r: f32 = f32(nan)")
    assert let.value.type == F32 and math.isnan(let.value.value)


@pytest.mark.parametrize("bits", [0x00000001, 0x7F7FFFFF, 0x3DCCCCCD, 0x80800000, 0x33D6BF95])
def test_f32_constant_round_trips_bit_exactly(bits):
    value = float(np.array(bits, np.uint32).view(np.float32))
    text = expr_roundtrip(Const(value, F32))
    (let,) = body_text(f"let r: f32 = {text}")
    assert np.array(let.value.value, np.float32).view(np.uint32) == bits


def test_cast_of_literal_differs_from_typed_constant():
    cast = Cast(Const(2.5, F64), F32)
    assert expr_roundtrip(cast) == "f32((2.5))"
    assert expr_roundtrip(Const(2.5, F32)) == "f32(2.5)"
    assert expr_roundtrip(Cast(Const(-1, I64), F32)) == "f32((-1))"
    assert expr_roundtrip(Cast(Const(True, BOOL), I32)) == "i32(true)"
    assert expr_roundtrip(Cast(Const(0.5, F32), F64)) == "f64(f32(0.5))"


def test_negation_of_literal_differs_from_negative_literal():
    assert expr_roundtrip(Unary("neg", Const(1, I64))) == "-(1)"
    assert expr_roundtrip(Unary("neg", Const(-1, I64))) == "-(-1)"
    assert expr_roundtrip(Const(-1, I64)) == "-1"


def test_cast_of_expression():
    assert expr_roundtrip(Cast(Binary("add", A, B), F32)) == "f32(a + b)"


# ------------------------------------------------------ other expressions

@pytest.mark.parametrize("expr, text", [
    (Select(P, A, B), "select(p, a, b)"),
    (Intrinsic("sqrt", (X,)), "sqrt(x)"),
    (Intrinsic("min", (A, B)), "min(a, b)"),
    (InstanceId(1), "instance_id(1)"),
    (InstanceCount(0), "instance_count(0)"),
    (Load("buf", (A, B), F32), "buf[a, b]"),
    (Load("buf", (Binary("add", A, B),), F32), "buf[a + b]"),
    (Binary("mul", Load("buf", (A, B), F32), X), "buf[a, b] * x"),
    (Var("H", I64), "H"),
])
def test_expression_forms_round_trip(expr, text):
    assert expr_roundtrip(expr) == text


def test_call_type_comes_from_signature_defined_later():
    helper = KernelFunction("sq", (Parameter("v", F32),), (Return(Binary("mul", Var("v", F32),
                                                                        Var("v", F32))),), F32)
    call = Call("sq", (X,), F32)
    text = roundtrip(module_of([Let("r", F32, call), ExprStmt(call)], functions=(helper,)))
    assert text.index("func @k") < text.index("func @sq")
    assert "let r: f32 = @sq(x)" in text


def test_buffer_argument_is_a_var_of_buffer_type():
    helper = KernelFunction("fill", (Parameter("dst", BufferType(I32, (16,)), "inout"),), ())
    stmt = ExprStmt(Call("fill", (Var("hist", BufferType(I32, (16,))),), None))
    assert "@fill(hist)" in roundtrip(module_of([stmt], functions=(helper,)))


def test_shape_symbol_reads_as_i64_and_scalar_parameter_wins():
    (let,) = body_text("let r: i64 = N", params="in buf: f32[N]")
    assert let.value == Var("N", I64)
    (let,) = body_text("let r: i32 = N", params="in buf: f32[N], in N: i32")
    assert let.value == Var("N", I32)


def test_name_declared_in_a_branch_stays_readable_after_it():
    body = body_text("""
        if a > 0 {
          let t: f32 = x
        }
        let r: f32 = t
    """)
    assert body[1].value == Var("t", F32)


def test_inner_declaration_shadows_outer_only_inside_its_block():
    body = body_text("""
        let t: i64 = 1
        for i in 0 .. 4 step 1 {
          let t: f32 = x
          x = t
        }
        a = t
    """)
    assert body[1].body[1].value == Var("t", F32)
    assert body[2].value == Var("t", I64)


# ----------------------------------------------------------------- names

@pytest.mark.parametrize("name, text", [
    ("x y", '%"x y"'),
    ("for", '%"for"'),
    ("true", '%"true"'),
    ("", '%""'),
    ('quote"back\\', '%"quote\\"back\\\\"'),
    ("line\nbreak\ttab", '%"line\\nbreak\\ttab"'),
    ("bell\x07", '%"bell\\u{7}"'),
    ("é", '%"é"'),
    ("f32", "f32"),
    ("out", "out"),
])
def test_name_is_quoted_when_not_a_plain_identifier(name, text):
    expr = Var(name, F32)
    params = (Parameter(name, F32),)
    module = module_of([Let("r", F32, expr)], params=params)
    assert f"let r: f32 = {text}" in roundtrip(module)


def test_weird_function_graph_module_node_and_port_names_round_trip():
    param = Parameter("in put", BufferType(F32, ("my dim",)), "out")
    kernel = KernelFunction("my kernel", (param,), ())
    node = Node("the node", KernelBody("my kernel"), (Var("my dim", I64),), hint="a-b")
    graph = Graph("g raph", (Parameter("res", param.type, "out"),), (node,),
                  bind_outs=(BindOut("the node", "in put", "res"),))
    module = Module("odd module", {"my kernel": kernel}, {"g raph": graph}, "g raph")
    text = roundtrip(module)
    assert 'func @"my kernel"(out %"in put": f32[%"my dim"])' in text
    assert 'node %"the node" = @"my kernel" [%"my dim"] hint %"a-b"' in text


# ------------------------------------------------------------ statements

ALL_STATEMENTS = (
    Let("i", I64, InstanceId(0)),
    Let("acc", F32, Const(0.0, F32)),
    Let("old", I32, None),
    For("k", Const(0, I64), Var("H", I64), 1,
        (Assign("acc", Binary("add", Var("acc", F32),
                              Load("buf", (Var("i", I64), Var("k", I64)), F32))),),
        unroll=4, ivdep=True, trip_count=16),
    For("k", Const(3, I64), Const(-1, I64), -1, ()),
    If(Compare("lt", Var("i", I64), Var("H", I64)),
       (Store("buf", (Var("i", I64), Const(0, I64)), Var("acc", F32)),),
       (Store("buf", (Var("i", I64), Const(0, I64)), Unary("neg", Var("acc", F32))),)),
    If(P, (), (If(Q, (Barrier(),), (Return(),)),)),
    If(P, (Barrier(),)),
    While(Compare("gt", Var("acc", F32), Const(1.0, F32)),
          (Assign("acc", Binary("div", Var("acc", F32), Const(2.0, F32))),)),
    ArrayDecl("tmp", F32, (9,), "private"),
    ArrayDecl("scratch", F32, (4,), "private", zeroed=False),
    ArrayDecl("tile", F32, (16, 16), "local"),
    Store("tile", (Const(0, I64), Const(1, I64)), Load("tmp", (Const(2, I64),), F32)),
    AtomicUpdate("add", "hist", (Binary("rem", Var("i", I64), Const(16, I64)),),
                 Const(1, I32), "old"),
    AtomicUpdate("max", "hist", (Const(0, I64),), Var("old", I32)),
    Barrier(),
    Return(),
)

ALL_STATEMENTS_TEXT = """\
let i: i64 = instance_id(0)
let acc: f32 = f32(0.0)
let old: i32
for k in 0 .. H step 1 [unroll = 4, ivdep, trip_count = 16] {
  acc = acc + buf[i, k]
}
for k in 3 .. -1 step -1 {}
if i < H {
  buf[i, 0] = acc
} else {
  buf[i, 0] = -acc
}
if p {} else if q {
  barrier
} else {
  return
}
if p {
  barrier
}
while acc > f32(1.0) {
  acc = acc / f32(2.0)
}
private tmp: f32[9]
private scratch: f32[4] = undef
local tile: f32[16, 16]
tile[0, 1] = tmp[2]
atomic_add hist[i % 16], i32(1) -> old
atomic_max hist[0], old
barrier
return"""


def test_every_statement_kind_prints_canonically_and_round_trips():
    roundtrip(module_of(ALL_STATEMENTS))
    assert print_stmts(ALL_STATEMENTS) == ALL_STATEMENTS_TEXT


def test_an_array_initialised_otherwise_than_undef_is_refused_with_the_fix():
    text = print_module(module_of(ALL_STATEMENTS)).replace("f32[4] = undef", "f32[4] = zero")
    with pytest.raises(HpvmError) as error:
        parse_module(text)
    assert "expected 'undef'" in str(error.value) and "leave out '='" in str(error.value)


def test_return_value_of_helper():
    helper = KernelFunction("sq", (Parameter("v", F32),), (Return(Binary("mul", Var("v", F32),
                                                                        Var("v", F32))),), F32)
    module = Module("t", {"sq": helper}, {"main": Graph("main", ())}, "main")
    assert "func @sq(in v: f32) -> f32 {\n  return v * v\n}" in roundtrip(module)


def test_one_line_blocks_and_semicolons_parse_like_the_canonical_form():
    compact = body_text("if a > 0 { x = f32(1.0); a = 2 } else { return }")
    canonical = body_text("if a > 0 {\n  x = f32(1.0)\n  a = 2\n} else {\n  return\n}")
    assert compact == canonical


def test_comments_and_blank_lines_are_ignored():
    assert body_text("# a comment\n\nx = x  # trailing\n") == (Assign("x", X),)


# ----------------------------------------------------------------- nodes

def _graph_module(nodes, params=(), edges=(), functions=()) -> Module:
    graph = Graph("main", tuple(params), tuple(nodes), tuple(edges))
    return Module("t", {f.name: f for f in functions}, {"main": graph}, "main")


def test_kernel_node_with_replication_hint_and_attributes():
    kernel = KernelFunction("k", (Parameter("dst", BufferType(F32, ("H", "W")), "out"),), ())
    replication = (Var("H", I64), Binary("mul", Var("W", I64), Const(2, I64)))
    node = Node("blur", KernelBody("k"), replication,
                hint="gpu_opencl", attributes={"group": (16, 16), "fuse": True})
    text = roundtrip(_graph_module([node], functions=(kernel,)))
    assert "node blur = @k [H, W * 2] hint gpu_opencl {fuse = true, group = [16, 16]}" in text


def test_tensor_node_with_op_attributes_and_node_attributes():
    params = (Parameter("x", BufferType(F32, ("N", 1, 28, 28))),
              Parameter("w", BufferType(F32, (8, 1, 5, 5))),
              Parameter("y", BufferType(F32, ("N", 8, 24, 24)), "out"))
    conv = Node("conv1", TensorBody("conv2d", params, {"stride": (1, 1), "padding": (0, 0, 0, 0)}))
    relu = Node("relu1", TensorBody("relu", params[:1] + params[2:]), attributes={"approx": 2})
    text = roundtrip(_graph_module([conv, relu]))
    assert ("node conv1 = conv2d(in x: f32[N, 1, 28, 28], in w: f32[8, 1, 5, 5], "
            "out y: f32[N, 8, 24, 24]) {padding = [0, 0, 0, 0], stride = [1, 1]}") in text
    assert ("node relu1 = relu(in x: f32[N, 1, 28, 28], out y: f32[N, 8, 24, 24]) "
            "{} {approx = 2}") in text


@pytest.mark.parametrize("data", [
    np.arange(4, dtype=np.float32).reshape(2, 2),
    np.array([1.5, -2.25, np.inf], dtype=np.float16),
    np.array([[True, False, True]]),
    np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    np.array([255, 0, 7], dtype=np.uint8),
    np.array([np.nan, -0.0], dtype=np.float64),
])
def test_constant_node_data_round_trips(data):
    from hpvm.ir.types import scalar_type_of_dtype
    body = ConstantBody(BufferType(scalar_type_of_dtype(data.dtype), data.shape), data)
    roundtrip(_graph_module([Node("w0", body)]))


def test_constant_node_prints_little_endian_base64():
    data = np.arange(4, dtype=np.float32).reshape(2, 2)
    text = print_module(_graph_module([Node("w0", ConstantBody(BufferType(F32, (2, 2)), data))]))
    assert 'node w0 = const f32[2, 2] base64 "AAAAAAAAgD8AAABAAABAQA=="' in text


def test_constant_of_flat_type_keeps_its_data_shape():
    data = np.ones((2, 3), dtype=np.int32)
    text = roundtrip(_graph_module([Node("w", ConstantBody(BufferType(I32, None), data))]))
    assert "const i32[*] base64" in text and "shape [2, 3]" in text


def test_graph_node_edges_and_bindings_with_streams():
    child = Graph("child", (Parameter("src", BufferType(F32, ("N",))),
                            Parameter("dst", BufferType(F32, ("N",)), "out")))
    parent = Graph(
        "main", (Parameter("img", BufferType(F32, ("N",))), Parameter("t", F32),
                 Parameter("res", BufferType(F32, ("N",)), "out")),
        (Node("a", GraphBody("child")), Node("b", GraphBody("child"))),
        (Edge("a", "dst", "b", "src", "one-to-one", True), Edge("a", "dst", "b", "src")),
        (BindIn("img", "a", "src", True),),
        (BindOut("b", "dst", "res", True),))
    text = roundtrip(Module("t", {}, {"main": parent, "child": child}, "main"))
    assert text.endswith("graph @child(in src: f32[N], out dst: f32[N]) {}\n\nroot @main\n")
    for line in ("node a = graph @child", "edge a.dst -> b.src one-to-one stream",
                 "edge a.dst -> b.src all-to-all", "in img -> a.src stream",
                 "out b.dst -> res stream"):
        assert f"\n  {line}\n" in text


def test_parameter_directions_and_restrict():
    params = (Parameter("a", BufferType(F32, None), "in", True),
              Parameter("b", BufferType(F32, ()), "out"),
              Parameter("c", BufferType(F32, (3,)), "inout", True),
              Parameter("d", BufferType(F32, (3,)), "private"),
              Parameter("restrict", F32))
    text = roundtrip(module_of([], params=params))
    assert ("func @k(in restrict a: f32[*], out b: f32[], inout restrict c: f32[3], "
            "private d: f32[3], in restrict: f32) {}") in text


# ------------------------------------------------------------- attributes

def test_attribute_values_of_every_kind_with_sorted_keys():
    attrs = {"z": "say \"hi\"\n", "b": False, "i": -3, "f": 0.25, "big": 1e20,
             "inf": -math.inf, "nested": (1, (2.5, "x"), ()), "weird key": True}
    node = Node("n", GraphBody("main"), attributes=attrs)
    text = roundtrip(_graph_module([node]))
    assert ('{b = false, big = 1e+20, f = 0.25, i = -3, %"inf" = -inf, '
            'nested = [1, [2.5, "x"], []], '
            '%"weird key" = true, z = "say \\"hi\\"\\n"}') in text


# --------------------------------------------------------------- version

def test_header_carries_the_format_version():
    from hpvm.ir.graph import FORMAT_VERSION
    text = print_module(_graph_module([]))
    assert text.startswith(f"hpvm {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}\nmodule t\n\n")


def test_newer_minor_version_is_read_and_kept():
    module = parse_module("hpvm 1.7\nmodule t\n\ngraph @main() {}\n\nroot @main\n")
    assert module.version == (1, 7)
    assert print_module(module).startswith("hpvm 1.7\n")


def test_lists_may_break_after_openers_and_commas():
    text = ("hpvm 1.0\nmodule t\n\nfunc @k(\n  in a: i64,\n  out b: f32[\n    4]\n) {\n"
            "  b[min(a,\n    3)] = f32(1.0)\n}\n\ngraph @main() {\n"
            "  node n = @k [\n    4] {group = [\n    4],\n    x = 1\n  }\n}\n\nroot @main\n")
    module = parse_module(text)
    assert print_module(module).splitlines()[3] == "func @k(in a: i64, out b: f32[4]) {"
    assert module.graphs["main"].nodes[0].attributes == {"group": (4,), "x": 1}
