"""The generic C-style renderer: plain C from kernel IR (compiled with the
system C compiler and run through ctypes against the interpreter), names,
line origins, and the hooks subclasses override."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hpvm.codegen import CStyleRenderer, Identifiers
from hpvm.interp import run_kernel
from hpvm.ir.text import load_module, parse_module
from hpvm.ir.types import BufferType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ir"
KERNELS = """hpvm 1.3
module kernels

func @clip(in v: f32, in lo: f32) -> f32 {
  if v < lo {
    return lo
  }
  return v
}

func @steps(in a: i32[N], in floor_value: f32, out o: f32[N], out wrapped: i8[N]) {
  let i: i64 = instance_id(0)
  private acc: f32[2] = undef
  private zeros: f32[2]
  if a[i] < i32(0) {
    o[i] = f32(-1.0)
    return
  }
  for k in 0 .. 2 step 1 [unroll = 2] {
    acc[k] = f32(a[i]) * f32(k) + f32(i64(instance_count(0)))
  }
  o[i] = @clip(acc[0] + acc[1] + zeros[1], floor_value)
  wrapped[i] = i8(a[i]) * i8(100) / i8(-1)
}

graph @main(in a: i32[N], in floor_value: f32, out o: f32[N], out wrapped: i8[N]) {
  node steps = @steps [N]
  in a -> steps.a
  in floor_value -> steps.floor_value
  out steps.o -> o
  out steps.wrapped -> wrapped
}

root @main
"""


def compile_c(source: str, folder: Path) -> ctypes.CDLL:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    (folder / "kernels.c").write_text(source)
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(folder / "k.so"),
                    str(folder / "kernels.c"), "-lm"], check=True, capture_output=True)
    return ctypes.CDLL(str(folder / "k.so"))


def call_entry(library, entry: str, function, args: dict, replication) -> dict:
    """Call a default (loop-nest) entry: pointer and dims per buffer,
    scalars, then the replication sizes."""
    values = []
    for p in function.params:
        value = args[p.name]
        if isinstance(p.type, BufferType):
            values.append(value.ctypes.data_as(ctypes.c_void_p))
            values.extend(ctypes.c_int64(d) for d in value.shape)
        else:
            values.append(np.ctypeslib.as_ctypes_type(p.type.numpy_dtype)(value))
    values.extend(ctypes.c_int64(n) for n in replication)
    getattr(library, entry)(*values)
    return args


@pytest.mark.parametrize("source,function,rank", [
    (KERNELS, "steps", 1),
    ((EXAMPLES / "matmul.hpvm").read_text(), "matmul", 2),
    ((EXAMPLES / "blur.hpvm").read_text(), "blur_rows", 2),
])
def test_plain_c_entries_compute_what_the_interpreter_computes(tmp_path, source, function, rank):
    module = parse_module(source)
    renderer = CStyleRenderer(module)
    entry = renderer.add_entry(function, rank)
    library = compile_c(renderer.finish().text, tmp_path)
    rng = np.random.default_rng(0)
    kernel = module.function(function)
    sizes = {"N": 11, "M": 5, "K": 7, "H": 6, "W": 9}
    args = {}
    for p in kernel.params:
        if isinstance(p.type, BufferType):
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in p.type.shape)
            args[p.name] = (rng.integers(-5, 50, shape) if p.type.element.is_int
                            else rng.standard_normal(shape)).astype(p.type.element.numpy_dtype)
        else:
            args[p.name] = p.type.numpy_dtype.type(3)
    replication = {"steps": (11,), "matmul": (5, 9), "blur_rows": (6, 9)}[function]
    expected = run_kernel(module, function, {k: np.copy(v) for k, v in args.items()}, replication)
    got = call_entry(library, entry, kernel, args, replication)
    for name, value in expected.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(got[name], value, rtol=1e-5, err_msg=name)


def test_an_array_left_undefined_has_no_initialiser():
    renderer = CStyleRenderer(parse_module(KERNELS))
    renderer.add_entry("steps", 1)
    text = renderer.finish().text
    assert "acc[2];" in text and "zeros[2] = {0};" in text


def test_identifiers_keep_plain_names_and_rename_the_rest():
    names = Identifiers(frozenset({"int", "sqrt"}))
    assert names("acc") == "acc"
    assert names("int").startswith("hpvm_u") and names("int") == names("int")
    assert names("hpvm_id0") != "hpvm_id0"
    assert names("two words") != names("int") and " " not in names("two words")


def test_every_generated_line_knows_its_ir_statement():
    module = load_module(EXAMPLES / "matmul.hpvm")
    renderer = CStyleRenderer(module)
    renderer.add_entry("matmul", 2)
    source = renderer.finish()
    number = next(n for n, line in enumerate(source.text.splitlines(), 1) if "acc = (acc +" in line)
    assert source.origin_of(number).describe() == "function '@matmul': acc = acc + a[i, k] * b[k, j]"
    assert source.origin_of(1).describe() == "generated support code"


class IntelStyle(CStyleRenderer):
    """What an FPGA dialect overrides: loop pragmas and type names."""

    type_names = {**CStyleRenderer.type_names, "i64": "long"}

    def loop_pragmas(self, loop):
        return ["#pragma ii 1"] + super().loop_pragmas(loop)


def test_subclasses_change_spellings_through_hooks():
    renderer = IntelStyle(load_module(EXAMPLES / "matmul.hpvm"))
    renderer.add_entry("matmul", 2)
    text = renderer.finish().text
    assert "#pragma ii 1\n" in text and "#pragma unroll 4" in text
    assert "long i = hpvm_id0;" in text
