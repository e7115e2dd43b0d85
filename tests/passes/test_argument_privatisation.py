"""argument-privatisation: a fixed-size private buffer parameter becomes a
private array filled from the argument, and the port a plain input; the
results stay the same on every usable scalar target; parameters that are
not eligible are refused with the reason."""
import numpy as np
import pytest

import hpvm
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.argument_privatisation import eligible_params
from hpvm.testing import assert_outputs_close, usable_targets

PROGRAM = """hpvm 1.0
module t

func @k(private p: f32[SHAPE], in a: f32[N], out b: f32[N]) {
  p[0, 1] = p[0, 1] + a[instance_id(0)]
  b[instance_id(0)] = p[0, 1] + p[1, 2]
}

graph @main(in p: f32[SHAPE], in a: f32[N], out b: f32[N]) {
  node k = @k [N]
  in p -> k.p
  in a -> k.a
  out k.b -> b
}

root @main
"""


def module(shape: str = "2, 3"):
    return parse_module(PROGRAM.replace("SHAPE", shape))


def test_a_private_buffer_becomes_a_private_array_filled_from_the_argument():
    result = run_pipeline(module(), "argument-privatisation", verify_each=True)
    text = print_module(result)
    assert text[text.index("func"):text.index("graph")] == """func @k(in p: f32[2, 3], in a: f32[N], out b: f32[N]) {
  private p_private: f32[2, 3]
  for copy_index in 0 .. 6 step 1 {
    p_private[copy_index] = p[copy_index]
  }
  p_private[0, 1] = p_private[0, 1] + a[instance_id(0)]
  b[instance_id(0)] = p_private[0, 1] + p_private[1, 2]
}

"""
    inputs = {"p": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.arange(4, dtype=np.float32)}
    expected = {"b": np.arange(4, dtype=np.float32) + 1 + 5}
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module(), [target])(**inputs), expected, 0, 0, target)
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 0, 0, target)


def test_eligible_parameters_are_the_dse_knobs():
    assert eligible_params(module()) == ["k.p"]
    assert eligible_params(module("2, M")) == []
    assert eligible_params(module(), max_elements=5) == []


@pytest.mark.parametrize("shape, name, reason", [
    ("2, M", "k.p", "'k.p' has a size that is not fixed"),
    ("2, 3", "k.a", "'k.a' is not a private buffer"),
    ("2, 3", "k.q", "'k.q' names no parameter"),
])
def test_a_parameter_that_is_not_eligible_is_refused(shape, name, reason):
    with pytest.raises(PassError, match=reason):
        run_pipeline(module(shape), f"argument-privatisation{{params={name}}}")
