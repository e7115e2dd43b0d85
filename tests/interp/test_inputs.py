"""Input validation: every problem is reported before anything runs,
naming the parameter and the fix."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    F32, I32, I64, U8, BindIn, BindOut, BufferType, Graph, InstanceId, KernelBody,
    KernelFunction, Load, Module, Node, Parameter, Store, Var,
)
from hpvm.interp import run_module

I, J = InstanceId(0), InstanceId(1)


def masked_module():
    """out[h, w] = img[h, w] * mask[h, w] * gain, with a fixed 3-wide kernel
    ``taps`` and an integer ``count`` unused by the body."""
    image = BufferType(F32, ("H", "W"))
    params = (Parameter("img", image), Parameter("mask", image),
              Parameter("taps", BufferType(F32, (3,))), Parameter("gain", F32),
              Parameter("count", U8), Parameter("out", image, "out"))
    value = Load("img", (I, J), F32) * Load("mask", (I, J), F32) * Var("gain", F32)
    function = KernelFunction("apply", params, (Store("out", (I, J), value),))
    graph = Graph("main", params, (Node("apply", KernelBody("apply"),
                                        (Var("H", I64), Var("W", I64))),),
                  bind_ins=tuple(BindIn(p.name, "apply", p.name) for p in params[:-1]),
                  bind_outs=(BindOut("apply", "out", "out"),))
    return Module("masked", {"apply": function}, {"main": graph}, "main")


def good_inputs(**changes):
    inputs = {"img": np.ones((4, 5), np.float32), "mask": np.ones((4, 5), np.float32),
              "taps": np.zeros(3, np.float32), "gain": 2.0, "count": 1}
    inputs.update(changes)
    return {k: v for k, v in inputs.items() if v is not None}


def run_with(**changes):
    return run_module(masked_module(), good_inputs(**changes))


def test_valid_inputs_run():
    np.testing.assert_array_equal(run_with()["out"], np.full((4, 5), 2.0))


def test_unknown_input_lists_the_expected_inputs():
    with pytest.raises(ExecutionError, match="unknown input 'imag'.*img, mask, taps, gain, count"):
        run_with(imag=np.ones(1, np.float32))


def test_passing_an_output_is_an_error():
    with pytest.raises(ExecutionError, match="'out' is an output, not an input"):
        run_with(out=np.zeros((4, 5), np.float32))


def test_missing_input_is_named():
    with pytest.raises(ExecutionError, match="missing input 'mask'"):
        run_with(mask=None)


def test_wrong_dtype_names_the_parameter_and_both_types():
    with pytest.raises(ExecutionError) as error:
        run_with(img=np.ones((4, 5), np.float64))
    text = str(error.value)
    assert "parameter 'img'" in text and "f32 (float32)" in text and "got float64" in text
    assert "astype(np.float32)" in text


def test_wrong_rank_is_an_error():
    with pytest.raises(ExecutionError, match="'img'.*rank-2 array.*got shape \\[20\\]"):
        run_with(img=np.ones(20, np.float32))


def test_wrong_fixed_dimension_is_an_error():
    with pytest.raises(ExecutionError, match="'taps'.*size 3 in dimension 0.*\\[4\\]"):
        run_with(taps=np.zeros(4, np.float32))


def test_inconsistent_size_symbols_name_both_inputs():
    with pytest.raises(ExecutionError) as error:
        run_with(mask=np.ones((5, 5), np.float32))
    text = str(error.value)
    assert "'H' is 4" in text and "'img'" in text and "5" in text and "'mask'" in text
    assert "fix:" in text


def test_list_instead_of_array_is_an_error():
    with pytest.raises(ExecutionError, match="'taps'.*numpy array.*got list"):
        run_with(taps=[0.0, 0.0, 0.0])


def test_python_int_is_accepted_for_a_float_scalar():
    np.testing.assert_array_equal(run_with(gain=3)["out"], np.full((4, 5), 3.0))


def test_python_float_for_an_integer_scalar_is_an_error():
    with pytest.raises(ExecutionError, match="'count'.*scalar u8, got 1.5"):
        run_with(count=1.5)


def test_python_int_out_of_range_for_the_scalar_type_is_an_error():
    with pytest.raises(ExecutionError, match="'count'.*fits in u8"):
        run_with(count=300)


def test_numpy_scalar_of_another_dtype_is_not_cast():
    with pytest.raises(ExecutionError, match="'gain'.*scalar f32, got a float64"):
        run_with(gain=np.float64(2.0))


def test_numpy_scalar_of_the_right_dtype_is_accepted():
    np.testing.assert_array_equal(run_with(gain=np.float32(0.5))["out"], np.full((4, 5), 0.5))


def test_integer_scalar_must_agree_with_a_size_of_the_same_name():
    params = (Parameter("N", I32), Parameter("x", BufferType(F32, ("N",))),
              Parameter("y", BufferType(F32, ("N",)), "out"))
    function = KernelFunction("copy", params, (Store("y", (I,), Load("x", (I,), F32)),))
    graph = Graph("main", params, (Node("copy", KernelBody("copy"), (Var("N", I64),)),),
                  bind_ins=(BindIn("N", "copy", "N"), BindIn("x", "copy", "x")),
                  bind_outs=(BindOut("copy", "y", "y"),))
    module = Module("copy", {"copy": function}, {"main": graph}, "main")
    with pytest.raises(ExecutionError, match="'N' is 3 from parameter 'N' but 4"):
        run_module(module, {"N": 3, "x": np.zeros(4, np.float32)})
