"""f32 division by a constant through double precision (renderer.py):
the quotient the IR's division gives, bit for bit, on values of every
magnitude and the special ones, against the interpreter; rendered only
for f32 divisions by finite non-zero constants."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm_opencl.renderer import OpenCLRenderer

PROGRAM = """hpvm 1.0
module divisions

func @divide(in x: f32[N], out y: f32[N], out z: f32[N], out w: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] / f32(DIVISOR)
  z[i] = x[i] / x[0]
  w[i] = f32(f64(x[i]) / f64(3.0))
}

graph @main(in x: f32[N], out y: f32[N], out z: f32[N], out w: f32[N]) {
  node d = @divide [N]
  in x -> d.x
  out d.y -> y
  out d.z -> z
  out d.w -> w
}

root @main
"""


def program(divisor: str):
    return parse_module(PROGRAM.replace("DIVISOR", divisor))


def rendered(divisor: str, in_double: bool) -> str:
    renderer = OpenCLRenderer(program(divisor), constant_division_in_double=in_double)
    renderer.add_entry("divide", 1)
    return renderer.finish().text


def test_only_f32_divisions_by_finite_non_zero_constants_go_through_double():
    text = rendered("3.0", True)
    assert "hpvm_div_by_constant(x[(HPVM_INDEX)i], 3.0, 0.3333333333333333)" in text
    assert text.count("static inline float hpvm_div_by_constant(") == 1
    assert "(x[(HPVM_INDEX)i] / x[(HPVM_INDEX)(0)])" in text  # not a constant
    assert "((double)x[(HPVM_INDEX)i]) / 3.0" in text  # f64
    assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in text
    for divisor in ("0.0", "inf"):
        assert "hpvm_div_by_constant" not in rendered(divisor, True)
    assert "hpvm_div_by_constant" not in rendered("3.0", False)


@pytest.mark.parametrize("in_double", [True, False])
def test_a_division_by_a_power_of_two_is_the_product_by_its_reciprocal(in_double):
    for divisor, product in (("16.0", "* 0.0625f"), ("-0.5", "* (-2.0f)"),
                             ("5.877471754111438e-39", "* 1.7014118346046923e+38f")):  # 2^-127
        text = rendered(divisor, in_double)
        assert f"(x[(HPVM_INDEX)i] {product})" in text and "hpvm_div_by_constant" not in text
    renderer = OpenCLRenderer(parse_module(PROGRAM.replace("f64(3.0)", "f64(4.0)")
                                           .replace("DIVISOR", "3.0")))
    renderer.add_entry("divide", 1)
    assert "(((double)x[(HPVM_INDEX)i]) * 0.25)" in renderer.finish().text  # f64 too


def test_the_quotients_are_the_divisions_bit_for_bit():
    rng = np.random.default_rng(0)
    magnitudes = np.exp2(rng.integers(-149, 128, 1 << 16)).astype(np.float32)
    x = np.concatenate([
        np.array([1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -3e-39, 3.4e38, -3.4e38],
                 np.float32),
        rng.standard_normal(1 << 16).astype(np.float32) * magnitudes,
        rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    for divisor in ("3.0", "0.1", "-7.5", "1e-30", "1e30", "0.5", "16.0",
                    "1.7014118346046923e+38", "5.877471754111438e-39"):  # 2^127, 2^-127
        module = program(divisor)
        exe = rt.compile(module, targets=["gpu_opencl"])
        got, want = exe(x=x), run_module(module, {"x": x})
        for name in ("y", "z", "w"):
            same = (got[name].view(np.uint32) == want[name].view(np.uint32)) \
                | (np.isnan(got[name]) & np.isnan(want[name]))
            assert same.all(), (divisor, name, x[~same][:5], got[name][~same][:5])


def test_a_program_compiled_so_for_a_device_without_fp64_names_the_node_and_the_fix(
        monkeypatch, tmp_path):
    import hpvm
    from hpvm.errors import TargetError
    from hpvm_opencl.devices import DeviceInfo
    module = parse_module(PROGRAM.replace("  w[i] = f32(f64(x[i]) / f64(3.0))\n", "")
                          .replace("DIVISOR", "3.0"))
    rt.compile(module, targets=["gpu_opencl"]).save(tmp_path / "exe")
    monkeypatch.setattr(DeviceInfo, "fp64", property(lambda self: False))
    with pytest.raises(TargetError, match=r"'@main.d'.*division by constants in double "
                                          r"precision.*compile again.*cl_khr_fp64"):
        hpvm.load(tmp_path / "exe")(x=np.ones(8, np.float32))
