"""Every kind of scalar operator as OpenCL C (PoCL here, any device in
general) against the reference interpreter.  The operators of one type
share one kernel and all kernels one program: the suite pays for one build
and a dozen kernels, not hundreds."""
import numpy as np
import pytest

from hpvm.interp import run_kernel
from hpvm.ir.kernel import Binary, Cast, Compare, Const, Intrinsic, Select, Unary
from hpvm.ir.types import BOOL, F16, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64
from hpvm_gpu_opencl.testing import KernelProgram, maps_function, module_of

RNG = np.random.default_rng(3)
N = 97
INTS = [I8, U8, I16, U16, I32, U32, I64, U64]
FLOATS = [F16, F32, F64]


def ints(t):
    info = np.iinfo(t.numpy_dtype)
    values = RNG.integers(info.min, info.max, N, dtype=t.numpy_dtype, endpoint=True)
    values[:4] = [info.min, info.max, 0, 1] if t.is_signed else [info.max, 0, 1, 2]
    return values


def divisors(t):
    values = ints(t)
    values[values == 0] = 3
    values[0] = -1 if t.is_signed else 7  # MIN / -1 wraps
    return values


def floats(t, special=True):
    values = (RNG.standard_normal(N) * 10).astype(t.numpy_dtype)
    if special:
        values[:4] = [np.nan, np.inf, -0.0, -np.inf]
    return values


def positive(t):
    return (RNG.random(N) * 10 + 0.01).astype(t.numpy_dtype)


def integer_group(t):
    inputs = {"a": ints(t), "b": ints(t), "d": divisors(t),
              "s": RNG.integers(0, 3 * t.bits, N).astype(t.numpy_dtype)}
    outputs = {op: (t, lambda a, b, op=op: Binary(op, a, b))
               for op in ("add", "sub", "mul", "and", "or", "xor")}
    outputs.update({op: (t, lambda a, d, op=op: Binary(op, a, d)) for op in ("div", "rem")})
    outputs.update({f"{op}_const": (t, lambda a, op=op: Binary(op, a, Const(7, t)))
                    for op in ("div", "rem")})
    outputs.update({op: (t, lambda a, s, op=op: Binary(op, a, s)) for op in ("shl", "shr")})
    outputs.update({op: (t, lambda a, op=op: Unary(op, a)) for op in ("neg", "not", "bitnot")})
    outputs.update({
        "abs": (t, lambda a: Intrinsic("abs", (a,))),
        "min": (t, lambda a, b: Intrinsic("min", (a, b))),
        "max": (t, lambda a, b: Intrinsic("max", (a, b))),
        "lt": (BOOL, lambda a, b: a.lt(b)),
        "to_f32": (F32, lambda a: Cast(a, F32)),
        "to_i8": (I8, lambda a: Cast(a, I8)),
        "to_u64": (U64, lambda a: Cast(a, U64)),
        "to_bool": (BOOL, lambda a: Cast(a, BOOL)),
    })
    return inputs, outputs


def float_group(t):
    inputs = {"a": floats(t), "b": floats(t), "p": positive(t), "q": positive(t) / 4,
              "r": floats(t, special=False)}
    outputs = {op: (t, lambda a, b, op=op: Binary(op, a, b))
               for op in ("add", "sub", "mul", "div", "rem")}
    outputs.update({name: (t, lambda p, name=name: Intrinsic(name, (p,))) for name in ("sqrt", "log")})
    outputs.update({name: (t, lambda r, name=name: Intrinsic(name, (r / Const(4, t),)))
                    for name in ("exp", "sin", "cos", "tanh")})
    outputs.update({name: (t, lambda a, name=name: Intrinsic(name, (a,)))
                    for name in ("floor", "ceil", "abs")})
    outputs.update({name: (t, lambda a, b, name=name: Intrinsic(name, (a, b)))
                    for name in ("min", "max")})
    outputs.update({op: (BOOL, lambda a, b, op=op: Compare(op, a, b))
                    for op in ("eq", "ne", "lt", "ge")})
    outputs.update({f"to_{o}": (o, lambda a, o=o: Cast(a, o)) for o in FLOATS})
    outputs.update({
        "pow": (t, lambda p, q: Intrinsic("pow", (p, q))),
        "neg": (t, lambda a: -a),
        "to_i32": (I32, lambda r: Cast(r, I32)),
        "to_bool": (BOOL, lambda a: Cast(a, BOOL)),
        "nan_constant": (t, lambda a: Intrinsic("max", (a, Const(float("nan"), t)))),
        "inf_constant": (t, lambda a: Intrinsic("min", (a, Const(float("inf"), t))) + Const(-0.0, t)),
    })
    return inputs, outputs


def mixed_group():
    inputs = {"c": RNG.integers(0, 2, N).astype(bool), "e": RNG.integers(0, 2, N).astype(bool),
              "x": floats(F32), "y": floats(F32), "w": ints(I64)}
    outputs = {
        "select": (F32, lambda c, x, y: Select(c, x, y)),
        "land_lor": (BOOL, lambda c, e: Binary("lor", Binary("land", c, e), Unary("not", e))),
        "bool_bitwise": (BOOL, lambda c, e: Binary("xor", Unary("bitnot", c), e)),
        "bool_to_f32": (F32, lambda c: Cast(c, F32)),
        "extreme_ints": (I64, lambda w: w + Const(-(1 << 63), I64)
                         + Cast(Const(-(1 << 31), I32), I64)),
    }
    return inputs, outputs


GROUPS = {**{f"ops_{t}": integer_group(t) for t in INTS},
          **{f"ops_{t}": float_group(t) for t in FLOATS}, "mixed": mixed_group()}
CASES = [(group, out) for group, (_, outputs) in GROUPS.items() for out in outputs]


def _type_of(array):
    from hpvm.ir.types import scalar_type_of_dtype
    return scalar_type_of_dtype(array.dtype)


@pytest.fixture(scope="module")
def results():
    functions = [maps_function(name, {k: _type_of(v) for k, v in inputs.items()}, outputs)
                 for name, (inputs, outputs) in GROUPS.items()]
    program = KernelProgram(module_of(*functions), {f.name: 1 for f in functions})
    found = {}
    for name, (inputs, outputs) in GROUPS.items():
        args = {**inputs, **{o: np.zeros(N, t.numpy_dtype) for o, (t, _) in outputs.items()}}
        found[name] = (program.run(name, args, (N,)),
                       run_kernel(program.module, name, dict(args), (N,)))
    return found


@pytest.mark.parametrize("group,output", CASES, ids=[f"{g}.{o}" for g, o in CASES])
def test_operator_matches_the_interpreter(results, group, output):
    got, expected = (r[output] for r in results[group])
    assert got.dtype == expected.dtype
    is_f16 = "f16" in group or output.endswith("f16")
    if got.dtype.kind == "f" and not output.startswith(("to_", "floor", "ceil", "abs", "neg")):
        tolerance = 2e-3 if is_f16 else 1e-6  # OpenCL allows a few ulp in exp, sin ...
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance,
                                   equal_nan=True, err_msg=f"{group}.{output}")
    else:
        np.testing.assert_array_equal(got, expected, err_msg=f"{group}.{output}")
