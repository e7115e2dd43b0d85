"""Which buffers the cpu tells LLVM alias nothing (``noalias``): outputs,
made fresh for their node, buffers updated in place and the inputs
beside them (the runtime never hands an updated buffer memory another
argument reads: one array passed as both is copied); then a load need
not be repeated after a store to another buffer (two outputs of one
input share its work)."""
import re

import numpy as np

import hpvm
import hpvm.lang as hl
from hpvm.codegen.aliasing import aliases_nothing
from hpvm.ir.kernel import InstanceId, Intrinsic, KernelFunction, Load, Store
from hpvm.lang import Buffer, InOut, f32, parallel_loop
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import F32, BufferType
from hpvm_cpu.codegen.functions import build_module
from hpvm_cpu.codegen.testing import module_of, run_cpu

VECTOR = BufferType(F32, ("N",))


def kernel(*directions: str) -> KernelFunction:
    """``sin`` of the first buffer into each of the others, ``p0 ... pn``."""
    i = InstanceId(0)
    params = tuple(Parameter(f"p{k}", VECTOR, d) for k, d in enumerate(directions))
    body = tuple(Store(p.name, (i,), Intrinsic("sin", (Load("p0", (i,), F32),)))
                 for p in params[1:])
    return KernelFunction("k", params, body)


def noalias_flags(function: KernelFunction) -> list[bool]:
    text, _ = build_module(module_of(function), {function.name: 1}, "m")
    body = next(line for line in text.splitlines() if line.startswith("define") and ".body" in line)
    pointers = re.findall(r"ptr( noalias)? %", body)
    return [flag == " noalias" for flag in pointers]


def test_outputs_and_inputs_beside_outputs_alias_nothing():
    assert noalias_flags(kernel("in", "out", "out")) == [True, True, True]


def test_a_buffer_updated_in_place_and_the_inputs_beside_it_alias_nothing():
    assert noalias_flags(kernel("in", "inout", "out")) == [True, True, True]
    function = kernel("in", "inout", "private")   # a private copy may be the caller's
    assert [aliases_nothing(p, function, updated=True) for p in function.params] == [
        False, False, False]
    # OpenCL's restrict keeps the rule without updated buffers (not yet measured on a GPU)
    function = kernel("in", "inout", "out")
    assert [aliases_nothing(p, function) for p in function.params] == [False, False, True]


@hl.program
def shifted(x: Buffer[f32, "N"], y: InOut[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(x, y), outs=(y,), name="add"):
        y[i] = y[i] + x[(i + 1) % N]


def test_one_array_given_as_an_input_and_the_buffer_updated_is_copied_first():
    """The promise ``noalias`` rests on: ``y += x shifted`` with x and y
    the same array reads the values before the update, on every size and
    after a donation."""
    exe = hpvm.compile(shifted, targets=["cpu"])
    for n in (1, 17, 1000, 4099):
        a = np.arange(n, dtype=np.float32)
        expected = a + np.roll(a, -1)
        np.testing.assert_array_equal(exe(x=a, y=a)["y"], expected)
        np.testing.assert_array_equal(a, np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(exe(x=a, y=hpvm.donate(a))["y"], expected)


def test_two_outputs_of_one_input_agree_with_the_golden_model():
    a = np.linspace(-50, 50, 1003, dtype=np.float32)
    out = run_cpu(module_of(kernel("in", "out", "out")), "k",
                  {"p0": a, "p1": np.empty_like(a), "p2": np.empty_like(a)}, (a.size,))
    np.testing.assert_allclose(out["p1"], np.sin(a), rtol=2.4e-7, atol=1e-7)
    np.testing.assert_array_equal(out["p1"], out["p2"])
