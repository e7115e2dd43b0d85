"""Which buffers the cpu tells LLVM alias nothing (``noalias``): outputs,
made fresh for their node, and inputs where nothing the kernel is given
is updated; then a load need not be repeated after a store to another
buffer (two outputs of one input share its work)."""
import re

import numpy as np

from hpvm.ir.kernel import InstanceId, Intrinsic, KernelFunction, Load, Store
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


def test_an_input_beside_a_buffer_updated_in_place_may_alias_it():
    assert noalias_flags(kernel("in", "inout", "out")) == [False, False, True]


def test_two_outputs_of_one_input_agree_with_the_golden_model():
    a = np.linspace(-50, 50, 1003, dtype=np.float32)
    out = run_cpu(module_of(kernel("in", "out", "out")), "k",
                  {"p0": a, "p1": np.empty_like(a), "p2": np.empty_like(a)}, (a.size,))
    np.testing.assert_allclose(out["p1"], np.sin(a), rtol=2.4e-7, atol=1e-7)
    np.testing.assert_array_equal(out["p1"], out["p2"])
