"""Hostile and damaged inputs to the ``hpvm`` command: every one ends in
one ``hpvm: error:`` message naming the file (and line, node or parameter)
and exit code 1, never a traceback (docs/hostile-inputs.md lists them)."""
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hpvm.cli import main

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "examples" / "matmul.py"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A cpu executable of examples/matmul.py and inputs for it."""
    folder = tmp_path_factory.mktemp("saved")
    assert main(["compile", f"{MATMUL}:matmul", "--targets", "cpu", "-o",
                 str(folder / "mm.hpvmx")]) == 0
    np.savez(folder / "in.npz", A=np.ones((2, 3), np.float32), B=np.ones((3, 4), np.float32))
    return folder


def damaged_copy(saved: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "mm.hpvmx"
    shutil.copytree(saved / "mm.hpvmx", copy)
    return copy


def run_saved(folder: Path, saved: Path, capsys) -> str:
    assert main(["run", str(folder), "--inputs", str(saved / "in.npz"),
                 "--outputs", str(folder.parent / "out.npz")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error: ") and "Traceback" not in err
    assert not (folder.parent / "out.npz").exists()
    return err


def rewrite_json(path: Path, change) -> None:
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_the_saved_executable_runs(saved, capsys):
    assert main(["run", str(saved / "mm.hpvmx"), "--inputs", str(saved / "in.npz")]) == 0
    assert "C: float32[2, 4]" in capsys.readouterr().out


def test_a_truncated_manifest_is_a_located_error(saved, tmp_path, capsys):
    folder = damaged_copy(saved, tmp_path)
    manifest = folder / "executable.json"
    manifest.write_text(manifest.read_text()[:100])
    err = run_saved(folder, saved, capsys)
    assert f"{manifest}:" in err and "not valid JSON" in err


def test_a_file_name_outside_the_folder_is_refused(saved, tmp_path, capsys):
    folder = damaged_copy(saved, tmp_path)
    rewrite_json(folder / "artifacts" / "cpu" / "artifact.json",
                 lambda m: m["files"].append("../../../../etc/passwd"))
    err = run_saved(folder, saved, capsys)
    assert "'../../../../etc/passwd' points outside its folder" in err


@pytest.mark.parametrize("damage", [lambda text: "garbage\n",
                                    lambda text: text.replace("fadd", "fsub")],
                         ids=["garbage", "edited"])
def test_a_changed_file_is_refused_naming_it(saved, tmp_path, capsys, damage):
    folder = damaged_copy(saved, tmp_path)
    ir = kernel_ir(folder)
    ir.write_text(damage(ir.read_text()))
    err = run_saved(folder, saved, capsys)
    assert f"{ir}: its content differs from what was saved" in err


def test_invalid_llvm_ir_with_a_matching_hash_is_a_located_error(saved, tmp_path, capsys):
    folder = damaged_copy(saved, tmp_path)
    ir = kernel_ir(folder)
    ir.write_text("garbage\n")
    digest = hashlib.sha256(ir.read_bytes()).hexdigest()
    rewrite_json(folder / "artifacts" / "cpu" / "artifact.json",
                 lambda m: m["sha256"].update({ir.name: digest}))
    err = run_saved(folder, saved, capsys)
    assert f"artifacts/cpu/{ir.name}:1:1: expected top-level entity" in err


def kernel_ir(folder):
    """The saved matmul's one kernel (its name follows the cpu's schedule)."""
    [ir] = (folder / "artifacts" / "cpu").glob("matmul*.ll")
    return ir


def test_a_changed_module_is_refused(saved, tmp_path, capsys):
    folder = damaged_copy(saved, tmp_path)
    module = folder / "module.hpvm"
    module.write_text(module.read_text() + "\n")
    assert "module.hpvm: its content differs" in run_saved(folder, saved, capsys)


def test_a_malformed_placement_is_a_located_error(saved, tmp_path, capsys):
    folder = damaged_copy(saved, tmp_path)
    rewrite_json(folder / "executable.json", lambda m: m.update(placement={"targets": 3}))
    assert "'placement' is malformed" in run_saved(folder, saved, capsys)


def deep_module(expression: str) -> str:
    return ("hpvm 1.0\nmodule m\nfunc @k(in x: f32[N], out y: f32[N]) {\n"
            f"  y[instance_id(0)] = {expression}\n}}\n"
            "graph @main(in x: f32[N], out y: f32[N]) {\n  node a = @k [N]\n"
            "  in x -> a.x\n  out a.y -> y\n}\nroot @main\n")


@pytest.mark.parametrize("expression", [
    "(" * 3000 + "x[0]" + ")" * 3000,
    " + ".join(["x[0]"] * 3000),
    "-" * 3000 + "x[0]",
], ids=["parentheses", "chain", "unary"])
def test_an_expression_nested_3000_deep_is_a_located_error(tmp_path, capsys, expression):
    path = tmp_path / "deep.hpvm"
    path.write_text(deep_module(expression))
    assert main(["ir", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"hpvm: error: {path}:4:") and "nested more than 100 levels" in err


def test_an_expression_just_inside_the_limit_runs_everywhere(tmp_path, capsys):
    import hpvm
    from hpvm.ir.text import load_module
    path = tmp_path / "deep.hpvm"
    path.write_text(deep_module("(" * 48 + "x[instance_id(0)]" + " + f32(1.0))" * 48))
    module = load_module(path)
    x = np.arange(5, dtype=np.float32)
    for target in ("interp", "cpu"):
        result = hpvm.compile(module, targets=[target])(x=x)["y"]
        np.testing.assert_array_equal(result, x + 48)


def test_a_huge_replication_is_refused_naming_the_node(tmp_path, capsys):
    path = tmp_path / "huge.hpvm"
    path.write_text(deep_module("x[0]").replace("node a = @k [N]",
                                                "node a = @k [99999999999, 99999999999]"))
    np.savez(tmp_path / "in.npz", x=np.zeros(3, np.float32))
    assert main(["run", str(path), "--target", "interp", "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 1
    err = capsys.readouterr().err
    assert "node 'a': replication [99999999999, 99999999999] is invalid" in err


def test_an_output_larger_than_memory_says_how_much_was_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HPVM_MEMORY_LIMIT", "1M")
    path = tmp_path / "big.hpvm"
    path.write_text(deep_module("x[0]").replace("out y: f32[N]", "in n: i64, out y: f32[n]")
                    .replace("in x: f32[N], in n", "in x: f32[N], in n").replace(
                        "  in x -> a.x\n", "  in x -> a.x\n  in n -> a.n\n"))
    np.savez(tmp_path / "in.npz", x=np.zeros(3, np.float32), n=np.int64(1 << 20))
    assert main(["run", str(path), "--target", "interp", "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 1
    err = capsys.readouterr().err
    assert "output 'y' needs 4.0 MiB (shape [1048576] of 4-byte elements), more than the " \
           "1.0 MiB allowed" in err


def test_a_program_file_that_raises_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "prog.py"
    path.write_text("import hpvm\n\nvalue = 1 / 0\n")
    assert main(["compile", f"{path}:prog", "--emit", "ir", "-o", str(tmp_path / "o.hpvm")]) == 1
    assert capsys.readouterr().err == (f"hpvm: error: {path}:3: importing the program raised "
                                       "ZeroDivisionError: division by zero (fix: fix the program)\n")


def test_an_unexpected_exception_is_one_line_not_a_traceback(monkeypatch, capsys):
    from hpvm.cli import targets
    monkeypatch.delenv("HPVM_TRACEBACK", raising=False)
    monkeypatch.setattr(targets, "show_targets", lambda args: {}["boom"])
    assert main(["targets"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error: internal error: KeyError: 'boom' (this is a bug")


def test_an_input_array_whose_header_claims_a_huge_shape_is_refused_before_reading(
        tmp_path, capsys):
    import io
    import zipfile
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (10 ** 15,)})
    inputs = tmp_path / "in.npz"
    with zipfile.ZipFile(inputs, "w") as archive:
        archive.writestr("x.npy", header.getvalue() + b"\0" * 16)
    program = tmp_path / "p.hpvm"
    program.write_text(deep_module("x[0]"))
    assert main(["run", str(program), "--inputs", str(inputs)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"hpvm: error: {inputs}, parameter 'x': input array 'x' needs 3.64e+03 TiB")
