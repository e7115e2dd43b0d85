"""The kernel type checker of the verifier (hpvm.ir.verify): scopes, types
of expressions and statements, calls, returns, atomics, arrays, loops.

Each test wraps one kernel in a single-node module and checks that a
diagnostic names the function (and the node running it) and the fix.
"""
from __future__ import annotations

from hpvm.ir import (
    BOOL, F32, I32, I64, ArrayDecl, Assign, AtomicUpdate, Barrier, BindIn,
    BindOut, Binary, BufferType, Call, Cast, Const, ExprStmt, For, Graph, If,
    InstanceId, Intrinsic, KernelBody, KernelFunction, Let, Load, Module,
    Node, Parameter, Return, Select, Store, Unary, Var, While,
)
from hpvm.ir.verify import check

VECTOR = BufferType(F32, ("N",))
PARAMS = (Parameter("X", VECTOR), Parameter("Y", VECTOR, "out"),
          Parameter("n", I32))
I = InstanceId(0)
N = Var("N", I64)


def kernel(*body, params=PARAMS, name="k", return_type=None) -> KernelFunction:
    return KernelFunction(name, params, tuple(body), return_type)


def leaf_module(node_kernel: KernelFunction, *helpers: KernelFunction,
                replication=(N,)) -> Module:
    """A root graph running ``node_kernel`` in node 'leaf', its ports bound
    to graph parameters of the same names."""
    params = node_kernel.params
    node = Node("leaf", KernelBody(node_kernel.name), replication)
    graph = Graph(
        "main", params, (node,),
        bind_ins=tuple(BindIn(p.name, "leaf", p.name) for p in params if p.reads),
        bind_outs=tuple(BindOut("leaf", p.name, p.name) for p in params if p.writes))
    functions = {f.name: f for f in (node_kernel,) + helpers}
    return Module("m", functions, {"main": graph}, "main")


def diagnostics_of(*body, **options):
    return check(leaf_module(kernel(*body, **options)))


def find(diagnostics, *fragments):
    """The diagnostics whose text contains every fragment (at least one)."""
    found = [d for d in diagnostics if all(f in str(d) for f in fragments)]
    assert found, f"no diagnostic with {fragments}; got:\n" + "\n".join(
        str(d) for d in diagnostics)
    return found


def copy_x_to_y(value=None):
    return Store("Y", (I,), Load("X", (I,), F32) if value is None else value)


# -- a correct kernel ------------------------------------------------------
def test_kernel_using_every_construct_verifies_clean():
    helper = kernel(Return(Var("v", F32) * 2.0), params=(Parameter("v", F32),),
                    name="twice", return_type=F32)
    store_helper = kernel(Store("out", (Const(0, I64),), Const(1.0, F32)),
                          params=(Parameter("out", VECTOR, "inout"),), name="poke")
    x = Load("X", (I,), F32)
    body = (
        ArrayDecl("tile", F32, (4,), "local"),
        Store("tile", (I % 4,), x),
        Barrier(),
        Let("acc", F32, Const(0.0, F32)),
        Let("n64", I64, Cast(Var("n", I32), I64)),
        For("j", Const(0, I64), Var("n64", I64), 1, (
            Let("acc", F32, Intrinsic("sqrt", (x,))),  # shadows the outer acc
        ), unroll=2),
        While(Var("acc", F32).lt(1.0), (Assign("acc", Var("acc", F32) + 1.0),)),
        If(Binary("land", I.lt(N), Var("n", I32).gt(0)), (
            Assign("acc", Call("twice", (Var("acc", F32),), F32)),
        ), (Assign("acc", Select(Var("n", I32).eq(1), x, -x)),)),
        ExprStmt(Call("poke", (Var("Y", VECTOR),), None)),
        Store("Y", (I,), Var("acc", F32)),
        Return(),
    )
    module = leaf_module(kernel(*body), helper, store_helper)
    assert check(module) == []


def test_diagnostic_names_function_and_node():
    (diagnostic,) = find(diagnostics_of(copy_x_to_y(Var("ghost", F32))),
                         "undefined variable 'ghost'")
    location = diagnostic.location
    assert (location.graph, location.node, location.function) == ("main", "leaf", "k")


def test_diagnostic_quotes_the_statement():
    find(diagnostics_of(Assign("n", Const(0, I32))), "in `n = i32(0)`")


def test_diagnostic_quotes_only_the_header_of_a_loop():
    loop = For("j", Const(0.0, F32), N, 1, (Assign("n", Const(0, I32)),))
    (header,) = find(diagnostics_of(loop), "start has type f32")
    assert "`for j in" in header.message and "n = " not in header.message
    find(diagnostics_of(loop), "cannot assign to 'n'", "in `n = i32(0)`")


def test_all_problems_are_collected():
    diagnostics = diagnostics_of(Assign("a", Const(1, I32)),
                                 Assign("b", Const(1, I32)), copy_x_to_y())
    assert len(find(diagnostics, "undeclared variable")) == 2


# -- scopes ----------------------------------------------------------------
def test_undefined_variable_says_where_to_declare():
    find(diagnostics_of(copy_x_to_y(Var("ghost", F32))),
         "undefined variable 'ghost'", "declare it with Let", "parameter 'ghost'")


def test_assignment_to_undeclared_variable():
    find(diagnostics_of(Assign("total", Const(0.0, F32))),
         "assignment to undeclared variable 'total'", "Let('total'")


def test_assignment_to_parameter():
    find(diagnostics_of(Assign("n", Const(0, I32))),
         "cannot assign to 'n': it is a scalar parameter (read-only)")


def test_assignment_to_shape_symbol():
    find(diagnostics_of(Assign("N", Const(0, I64))), "'N': it is a shape symbol")


def test_assignment_to_loop_variable():
    loop = For("j", Const(0, I64), N, 1, (Assign("j", Const(0, I64)),))
    find(diagnostics_of(loop), "'j': it is a loop variable")


def test_redeclaration_in_same_scope():
    find(diagnostics_of(Let("t", F32, None), Let("t", F32, None)),
         "'t' is declared twice in the same scope")


def test_let_shadowing_parameter_at_top_level_is_redeclaration():
    find(diagnostics_of(Let("n", I32, None)), "'n' is declared twice",
         "scalar parameter")


def test_shadowing_in_inner_scope_is_allowed():
    inner = If(Const(True, BOOL), (Let("t", I32, Const(2, I32)),))
    assert diagnostics_of(Let("t", F32, None), inner) == []


def test_let_is_scoped_to_its_block():
    body = (If(Const(True, BOOL), (Let("t", F32, Const(1.0, F32)),)),
            copy_x_to_y(Var("t", F32)))
    find(diagnostics_of(*body), "undefined variable 't'")


def test_loop_variable_is_scoped_to_the_body():
    body = (For("j", Const(0, I64), N, 1, ()), Store("Y", (Var("j", I64),), Const(0.0, F32)))
    find(diagnostics_of(*body), "undefined variable 'j'")


def test_variable_read_with_wrong_type():
    find(diagnostics_of(copy_x_to_y(Cast(Var("n", F32), F32))),
         "'n' is i32 but is read as f32")


# -- operators -----------------------------------------------------------------
def test_binary_operands_of_different_types_suggest_a_cast():
    value = Binary("add", Load("X", (I,), F32), Var("n", I32))
    find(diagnostics_of(copy_x_to_y(value)),
         "operands of 'add' have different types f32 and i32", "Cast(rhs, f32)")


def test_arithmetic_on_bool():
    value = Binary("add", Const(True, BOOL), Const(False, BOOL))
    find(diagnostics_of(Let("b", BOOL, value)), "arithmetic 'add' on bool")


def test_bitwise_on_floats():
    value = Binary("xor", Load("X", (I,), F32), Const(1.0, F32))
    find(diagnostics_of(copy_x_to_y(value)), "bitwise 'xor' on f32")


def test_shift_on_floats():
    value = Binary("shl", Load("X", (I,), F32), Const(1.0, F32))
    find(diagnostics_of(copy_x_to_y(value)), "bitwise 'shl' on f32")


def test_logical_and_on_integers():
    cond = Binary("land", Var("n", I32), Var("n", I32))
    find(diagnostics_of(If(cond, ())), "logical 'land' on i32")


def test_unknown_binary_operator():
    value = Binary("pow", Load("X", (I,), F32), Const(1.0, F32))
    find(diagnostics_of(copy_x_to_y(value)), "unknown binary operator 'pow'")


def test_not_on_integer():
    find(diagnostics_of(Let("b", I32, Unary("not", Var("n", I32)))), "'not' of a i32")


def test_compare_operands_of_different_types():
    find(diagnostics_of(If(Var("n", I32).lt(N), ())),
         "operands of 'lt' have different types i32 and i64")


def test_if_condition_not_bool():
    find(diagnostics_of(If(Var("n", I32), ())), "if condition has type i32",
         "must be bool")


def test_while_condition_not_bool():
    find(diagnostics_of(While(Var("n", I32), ())), "while condition has type i32")


def test_select_condition_not_bool():
    value = Select(Var("n", I32), Const(1.0, F32), Const(2.0, F32))
    find(diagnostics_of(copy_x_to_y(value)), "select condition has type i32")


def test_select_arms_differ():
    value = Select(Const(True, BOOL), Const(1.0, F32), Const(2, I32))
    find(diagnostics_of(copy_x_to_y(value)), "select arms have different types f32 and i32")


# -- loads and stores ----------------------------------------------------------
def test_load_of_unknown_buffer():
    find(diagnostics_of(copy_x_to_y(Load("Z", (I,), F32))),
         "load of unknown buffer 'Z'", "ArrayDecl")


def test_load_of_a_scalar():
    find(diagnostics_of(copy_x_to_y(Load("n", (I,), F32))),
         "load of 'n', which is a scalar parameter, not a buffer")


def test_wrong_number_of_indices():
    matrix = (Parameter("M", BufferType(F32, ("R", "C"))),
              Parameter("Y", BufferType(F32, ("R", "C")), "out"))
    body = (Store("Y", (I,), Load("M", (I, I, I), F32)),)
    find(check(leaf_module(kernel(*body, params=matrix), replication=(Var("R", I64),))),
         "'M' (f32[R, C]) is indexed with 3 indices; use 1 or 2")


def test_index_not_an_integer():
    find(diagnostics_of(copy_x_to_y(Load("X", (Const(1.0, F32),), F32))),
         "index 0 of 'X' has type f32", "Cast(index, i64)")


def test_store_value_type_differs_from_element_type():
    find(diagnostics_of(copy_x_to_y(Var("n", I32))),
         "value stored into 'Y' has type i32 but f32 is needed")


def test_store_into_read_only_parameter():
    store = Store("X", (I,), Const(0.0, F32))
    (diagnostic,) = find(diagnostics_of(store, copy_x_to_y()),
                         "parameter 'X' is read-only (direction in)",
                         "declare it out or inout")
    assert diagnostic.location.port == "X"


def test_load_type_differs_from_element_type():
    find(diagnostics_of(Let("v", I32, Load("X", (I,), I32))),
         "load of 'X' has type i32 but its elements are f32")


# -- intrinsics and casts --------------------------------------------------------
def test_unknown_intrinsic():
    find(diagnostics_of(copy_x_to_y(Intrinsic("erf", (Const(1.0, F32),)))),
         "unknown intrinsic 'erf'", "'sqrt'")


def test_intrinsic_with_wrong_arity():
    find(diagnostics_of(copy_x_to_y(Intrinsic("max", (Const(1.0, F32),)))),
         "intrinsic 'max' takes 2 argument(s), got 1")


def test_float_only_intrinsic_on_integer():
    find(diagnostics_of(Let("r", I32, Intrinsic("sqrt", (Var("n", I32),)))),
         "intrinsic 'sqrt' needs a float argument, got i32")


def test_cast_to_invalid_type():
    find(diagnostics_of(copy_x_to_y(Cast(Var("n", I32), VECTOR))), "cast to invalid type")


def test_cast_from_a_buffer():
    find(diagnostics_of(copy_x_to_y(Cast(Var("X", VECTOR), F32))),
         "buffer 'X' is used as a scalar (cast operand)", "Load")


# -- calls and returns --------------------------------------------------------
HALF = kernel(Return(Var("v", F32) * 0.5), params=(Parameter("v", F32),),
              name="half", return_type=F32)
FILL = kernel(Store("out", (Const(0, I64),), Const(1.0, F32)),
              params=(Parameter("out", VECTOR, "out"),), name="fill")


def call_module(*body, helpers=(HALF, FILL)):
    return check(leaf_module(kernel(*body), *helpers))


def test_call_of_unknown_function():
    find(call_module(copy_x_to_y(Call("halve", (Const(1.0, F32),), F32))),
         "call of unknown function '@halve'", "'half'")


def test_call_with_wrong_argument_count():
    find(call_module(copy_x_to_y(Call("half", (), F32))),
         "'@half' takes 1 argument(s), got 0", "'v'")


def test_call_with_wrong_argument_type():
    find(call_module(copy_x_to_y(Call("half", (Var("n", I32),), F32))),
         "argument 'v' of '@half' is i32 but the parameter is f32")


def test_call_passing_scalar_for_buffer():
    find(call_module(ExprStmt(Call("fill", (Const(1.0, F32),), None))),
         "argument 'out' of '@fill' must be a buffer")


def test_call_passing_buffer_for_scalar():
    find(call_module(copy_x_to_y(Call("half", (Var("X", VECTOR),), F32))),
         "buffer 'X' is used as a scalar (argument 'v' of '@half')")


def test_call_writing_a_read_only_buffer():
    find(call_module(ExprStmt(Call("fill", (Var("X", VECTOR),), None))),
         "argument 'out' of '@fill' writes its buffer but 'X' is read-only")


def test_call_of_helper_without_value_used_as_value():
    find(call_module(copy_x_to_y(Call("fill", (Var("Y", VECTOR),), None))),
         "helper '@fill' returns nothing but its call is used as a value")


def test_helper_return_without_value():
    broken = kernel(Return(), params=(Parameter("v", F32),), name="half",
                    return_type=F32)
    find(call_module(copy_x_to_y(Call("half", (Const(1.0, F32),), F32)),
                     helpers=(broken,)),
         "'@half' returns f32 but a Return has no value")


def test_helper_return_value_of_wrong_type():
    broken = kernel(Return(Const(1, I32)), params=(Parameter("v", F32),),
                    name="half", return_type=F32)
    (diagnostic,) = find(
        call_module(copy_x_to_y(Call("half", (Const(1.0, F32),), F32)),
                    helpers=(broken,)),
        "return value has type i32 but f32 is needed")
    assert diagnostic.location.function == "half"
    assert diagnostic.location.node is None


def test_helper_reaching_its_end_without_return():
    broken = kernel(If(Const(True, BOOL), (Return(Const(1.0, F32)),)),
                    params=(Parameter("v", F32),), name="half", return_type=F32)
    find(call_module(copy_x_to_y(Call("half", (Const(1.0, F32),), F32)),
                     helpers=(broken,)),
         "can reach its end without a return value")


def test_node_kernel_returning_a_value():
    find(diagnostics_of(Return(Const(1.0, F32))),
         "'@k' has no return type but returns a value")


def test_recursion_among_functions():
    ping = kernel(ExprStmt(Call("pong", (), None)), params=(), name="ping")
    pong = kernel(ExprStmt(Call("ping", (), None)), params=(), name="pong")
    module = leaf_module(kernel(ExprStmt(Call("ping", (), None))), ping, pong)
    find(check(module), "recursive calls '@ping' -> '@pong' -> '@ping'",
         "cannot recurse")


def test_self_recursion():
    loop = kernel(ExprStmt(Call("loop", (), None)), params=(), name="loop")
    find(check(leaf_module(kernel(ExprStmt(Call("loop", (), None))), loop)),
         "recursive calls '@loop' -> '@loop'")


# -- atomics, arrays, loops -------------------------------------------------------
ACCUMULATE = (Parameter("X", VECTOR), Parameter("Y", VECTOR, "inout"))


def atomic_diagnostics(*body):
    return check(leaf_module(kernel(*body, params=ACCUMULATE)))


def test_unknown_atomic_operation():
    find(atomic_diagnostics(AtomicUpdate("mul", "Y", (I,), Const(1.0, F32))),
         "unknown atomic operation 'mul'", "'add'")


def test_atomic_on_a_scalar():
    find(atomic_diagnostics(Let("s", F32, None),
                            AtomicUpdate("add", "s", (I,), Const(1.0, F32))),
         "atomic update of 's'", "not a buffer")


def test_atomic_value_type_mismatch():
    find(atomic_diagnostics(AtomicUpdate("add", "Y", (I,), Const(1, I32))),
         "value of atomic 'add' on 'Y' has type i32 but f32 is needed")


def test_atomic_result_variable_type_mismatch():
    find(atomic_diagnostics(Let("old", I32, None),
                            AtomicUpdate("add", "Y", (I,), Const(1.0, F32), "old")),
         "atomic result 'old' is i32 but the buffer holds f32")


def test_atomic_on_read_only_buffer():
    find(atomic_diagnostics(AtomicUpdate("add", "X", (I,), Const(1.0, F32))),
         "parameter 'X' is read-only")


def test_array_with_non_positive_dims():
    find(diagnostics_of(ArrayDecl("tile", F32, (4, 0)), copy_x_to_y()),
         "array 'tile' has shape (4, 0)", "positive")


def test_array_with_invalid_space():
    find(diagnostics_of(ArrayDecl("tile", F32, (4,), "global"), copy_x_to_y()),
         "array 'tile' has unknown memory space 'global'")


def test_for_with_step_zero():
    find(diagnostics_of(For("j", Const(0, I64), N, 0, ())),
         "loop 'j': step 0 must be a non-zero integer")


def test_for_with_non_integer_step():
    find(diagnostics_of(For("j", Const(0, I64), N, 1.5, ())),
         "loop 'j': step 1.5 must be a non-zero integer")


def test_for_with_float_bounds():
    find(diagnostics_of(For("j", Const(0.0, F32), N, 1, ())),
         "loop 'j': start has type f32")


def test_for_with_unroll_below_one():
    find(diagnostics_of(For("j", Const(0, I64), N, 1, (), unroll=0)),
         "loop 'j': unroll factor 0 must be an integer >= 1")


# -- parameters and malformed IR -------------------------------------------------
def test_scalar_parameter_naming_a_shape_symbol_must_be_integer():
    params = PARAMS + (Parameter("N", F32),)
    find(check(leaf_module(kernel(copy_x_to_y(), params=params))),
         "scalar parameter 'N' names a shape symbol but is f32")


def test_duplicate_parameter_names():
    params = PARAMS + (Parameter("n", I32),)
    find(check(leaf_module(kernel(copy_x_to_y(), params=params))),
         "declares parameter 'n' twice")


def test_malformed_ir_is_reported_not_raised():
    body = (For("j", None, N, 1, ()), Let("t", None, Const(1, I32)), "stmt",
            Store("Y", [I], 3.0))
    module = leaf_module(kernel(*body))
    module.functions["junk"] = "not a function"
    texts = [str(d) for d in check(module)]
    assert any("None is not a kernel expression" in t for t in texts)
    assert any("'stmt' is not a kernel statement" in t for t in texts)
    assert any("'junk' is not a KernelFunction" in t for t in texts)
