"""Object emission for cross targets, the compile cache, and errors."""
import ctypes
import dataclasses
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import hpvm.lang as hl
from hpvm.errors import ExecutionError, TargetError
from hpvm.ir.kernel import (
    ArrayDecl, Barrier, For, InstanceId, Intrinsic, KernelFunction, Load, Store,
)
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import F16, F32, BufferType
from hpvm.lang import Buffer, f32, task
from hpvm_cpu.codegen import compile_kernel_node, emit_object, entry_symbol
from hpvm_cpu.codegen import ArgumentLayout, cache, compiler
from hpvm_cpu.codegen.jit import ENTRY_TYPE
from hpvm_cpu.codegen.marshal import pack_arguments
from hpvm_cpu.codegen.testing import map_function, module_of

ELF_MACHINES = {"aarch64-linux-gnu": 183, "riscv64-linux-gnu": 243}


def tanh_module():
    return module_of(map_function({"x": F32, "h": F16}, F32,
                                  lambda x, h: Intrinsic("tanh", (x,)) + h.cast(F32)))


def elf_header(data: bytes) -> tuple[int, int]:
    """(ELF class, e_machine) of a little-endian ELF file."""
    assert data[:4] == b"\x7fELF"
    return data[4], struct.unpack_from("<H", data, 18)[0]


@pytest.mark.parametrize("triple", sorted(ELF_MACHINES))
def test_cross_object_is_an_elf_for_the_triple(triple):
    data = emit_object(tanh_module(), ["map"], triple=triple)
    elf_class, machine = elf_header(data)
    assert (elf_class, machine) == (2, ELF_MACHINES[triple])
    assert entry_symbol("map").encode() in data


def test_host_object_is_an_elf_for_this_machine():
    import platform
    expected = {"x86_64": 62, "aarch64": 183, "riscv64": 243}.get(platform.machine())
    if expected is None:
        pytest.skip(f"no ELF machine number known for {platform.machine()}")
    assert elf_header(emit_object(tanh_module(), {"map": 1}))[1] == expected


def test_unknown_triple_is_a_target_error():
    with pytest.raises(TargetError, match="no target"):
        emit_object(tanh_module(), ["map"], triple="nonsense-unknown-none")


def test_second_compile_comes_from_memory():
    module = tanh_module()
    assert compile_kernel_node(module, "map", 1) is compile_kernel_node(module, "map", 1)


def test_llvmlite_string_table_is_filled_before_threads_compile():
    # llvmlite fills it on first use without a lock; kernels compiled in
    # parallel threads must never see it half-filled (a KeyError once in CI).
    check = ("from hpvm_cpu.codegen import kernel_code; from llvmlite import ir; "
             "table = ir.values._escape_string.__defaults__[0]; "
             "assert len(table) == 256, len(table)")
    subprocess.run([sys.executable, "-c", check], check=True)


def test_disk_cache_serves_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_compiled", {})
    module = module_of(map_function({"x": F32}, F32, lambda x: x * 3.0 + 1.0))
    first = compile_kernel_node(module, "map", 1, {"tag": "disk-test"})
    # Stored under its key and under the key of loading its optimised IR.
    assert not first.from_cache and len(list((tmp_path / "cpu").rglob("*.ll"))) == 2
    monkeypatch.setattr(compiler, "_compiled", {})
    second = compile_kernel_node(module, "map", 1, {"tag": "disk-test"})
    assert second.from_cache
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(second.run({"x": x}, (5,))["out"], x * 3 + 1)


def test_cache_directory_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("HPVM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_directory().parent == tmp_path / "hpvm" / "cpu"
    assert cache.cache_directory().name == f"code-{cache.code_stamp()[:16]}"


def test_the_cache_keeps_the_versions_used_last(tmp_path, monkeypatch):
    """Entries of a code generator that changed are never read again: the
    first use in a process removes all but the KEPT_VERSIONS folders used
    last, and the files of the flat layout before version folders."""
    import os
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    root = tmp_path / "cpu"
    for age, name in enumerate(["code-newest", "code-older", "code-oldest"]):
        (root / name).mkdir(parents=True)
        (root / name / "entry.ll").write_text("")
        os.utime(root / name, (1e9 - age, 1e9 - age))
    (root / "0123abcd.ll").write_text("")   # flat layout, before the folders
    (root / "notes.txt").write_text("not ours")
    monkeypatch.setattr(compiler, "_compiled", {})
    module = module_of(map_function({"x": F32}, F32, lambda x: x - 5.0))
    compile_kernel_node(module, "map", 1, {"tag": "tidy-test"})
    kept = sorted(p.name for p in root.iterdir())
    current = cache.cache_directory().name
    assert kept == sorted([current, "code-newest", "code-older", "notes.txt"])
    assert len(list((root / current).glob("*.ll"))) == 2   # the compile's and the load's key


def test_cache_key_changes_with_the_kernel_and_options():
    machine = ("triple", "cpu", "features")
    one = module_of(map_function({"x": F32}, F32, lambda x: x + 1.0))
    two = module_of(map_function({"x": F32}, F32, lambda x: x + 2.0))
    key = cache.cache_key(one, "map", 1, {}, machine)
    assert key == cache.cache_key(one, "map", 1, {}, machine)
    assert key != cache.cache_key(two, "map", 1, {}, machine)
    assert key != cache.cache_key(one, "map", 1, {"opt_level": 1}, machine)
    assert key != cache.cache_key(one, "map", 2, {}, machine)


def test_cache_key_changes_with_the_code_generators_sources(monkeypatch):
    """An entry made by another version of the code generator is never read."""
    machine = ("triple", "cpu", "features")
    module = module_of(map_function({"x": F32}, F32, lambda x: x + 1.0))
    key = cache.cache_key(module, "map", 1, {}, machine)
    monkeypatch.setattr(cache, "code_stamp", lambda: "another code generator")
    assert cache.cache_key(module, "map", 1, {}, machine) != key


def test_sources_digest_sees_every_change_to_a_source(tmp_path):
    root = tmp_path / "hpvm_cpu"
    (root / "codegen").mkdir(parents=True)
    (root / "codegen" / "lanes.py").write_text("LANES = 16\n")
    (root / "notes.txt").write_text("not code")
    first = cache.sources_digest([root])
    (root / "notes.txt").write_text("still not code")
    assert cache.sources_digest([root]) == first
    (root / "codegen" / "lanes.py").write_text("LANES = 8\n")
    edited = cache.sources_digest([root])
    (root / "codegen" / "lanes.py").rename(root / "codegen" / "strips.py")
    assert len({first, edited, cache.sources_digest([root])}) == 3


def test_code_stamp_covers_the_code_generator():
    from pathlib import Path
    import hpvm.codegen.aliasing as aliasing
    import hpvm_cpu.codegen.lanes as lanes
    roots = [Path(__import__(name, fromlist=["_"]).__file__).parent
             for name in cache.CODE_PACKAGES]
    for module in (lanes, aliasing):   # an edit to either changes the machine code
        assert any(Path(module.__file__).is_relative_to(root) for root in roots)
    assert cache.code_stamp() == cache.sources_digest(roots)


def test_barrier_is_refused_with_a_clear_error():
    kernel = KernelFunction("sync", (Parameter("x", BufferType(F32, ("N",)), "inout"),), (
        ArrayDecl("tile", F32, (8,), "local"), Barrier()))
    with pytest.raises(TargetError, match="barriers are not supported by the cpu target yet"):
        compile_kernel_node(module_of(kernel), "sync", 1)


def test_unknown_function_is_a_target_error():
    with pytest.raises(TargetError, match="no function"):
        compile_kernel_node(tanh_module(), "missing", 1)


def test_wrong_dtype_names_the_parameter():
    kernel = compile_kernel_node(tanh_module(), "map", 1)
    with pytest.raises(ExecutionError, match="parameter 'x'.*float32"):
        kernel.run({"x": np.zeros(3), "h": np.zeros(3, np.float16)}, (3,))


def test_disagreeing_shape_symbols_are_reported():
    kernel = compile_kernel_node(tanh_module(), "map", 1)
    with pytest.raises(ExecutionError, match="shape symbol 'N'"):
        kernel.run({"x": np.zeros(3, np.float32), "h": np.zeros(4, np.float16)}, (3,))


def test_replication_of_the_wrong_rank_is_reported():
    kernel = compile_kernel_node(tanh_module(), "map", 1)
    with pytest.raises(ExecutionError, match="replication"):
        kernel.run({"x": np.zeros(3, np.float32), "h": np.zeros(3, np.float16)}, (3, 1))


def test_optimised_code_is_vectorised():
    kernel = compile_kernel_node(module_of(map_function(
        {"a": F32, "b": F32}, F32, lambda a, b: a * b + 1.0)), "map", 1)
    assert "x float>" in kernel.llvm_ir


def test_store_through_restrict_pointers_is_noalias():
    store = KernelFunction("copy", (Parameter("a", BufferType(F32, ("N",)), restrict=True),
                                    Parameter("b", BufferType(F32, ("N",)), "out", restrict=True)),
                           (Store("b", (InstanceId(0),), Load("a", (InstanceId(0),), F32)),))
    text = compile_kernel_node(module_of(store), "copy", 1, {"opt_level": 0}).llvm_ir
    assert "noalias" in text


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to link the object")
def test_host_object_links_and_runs_with_the_slot_abi(tmp_path):
    module = tanh_module()
    (tmp_path / "kernel.o").write_bytes(emit_object(module, {"map": 1}))
    library = tmp_path / "kernel.so"
    subprocess.run(["gcc", "-shared", "-o", str(library), str(tmp_path / "kernel.o"), "-lm"],
                   check=True)
    entry = ENTRY_TYPE(ctypes.cast(getattr(ctypes.CDLL(str(library)), entry_symbol("map")),
                                   ctypes.c_void_p).value)
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    h = np.full(9, 0.5, np.float16)
    args = {"x": x, "h": h, "out": np.zeros(9, np.float32)}
    packed = pack_arguments("map", ArgumentLayout.of(module.functions["map"], 1), args, (9,))
    entry(packed.address, 0, 9)
    np.testing.assert_allclose(args["out"], np.tanh(x) + 0.5, rtol=1e-6)


@hl.program
def total(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
    with task(ins=(x,), outs=(y,), name="fold"):
        y[0] = sum(x[i] for i in range(N))  # noqa: F821 (a shape symbol)


def test_a_float_sum_reduction_loop_is_vectorised_and_a_plain_one_is_not():
    """The loop's reduce promise lets the fold reassociate (one partial sum
    per vector lane); without it the sum stays one ordered chain."""
    module = total.build()
    folded = compile_kernel_node(module, "fold", 0)
    assert "fadd reassoc <" in folded.llvm_ir
    function = module.functions["fold"]
    plain = dataclasses.replace(module, functions={"fold": dataclasses.replace(function, body=tuple(
        dataclasses.replace(s, reduce=()) if isinstance(s, For) else s for s in function.body))})
    assert "reassoc" not in compile_kernel_node(plain, "fold", 0).llvm_ir
    x = np.random.default_rng(0).random(1000, dtype=np.float32)
    np.testing.assert_allclose(folded.run({"x": x})["y"], [x.astype(np.float64).sum()], rtol=1e-5)
