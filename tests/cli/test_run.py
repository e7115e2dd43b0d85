"""``hpvm run``: inputs checked before running, outputs written atomically."""
import os

import numpy as np
import pytest

import hpvm
from hpvm import registry as registry_module
from hpvm.cli import main
from hpvm.cli.demo import save_demo
from hpvm.cli.demo_program import blur_reference
from hpvm.registry import Registry
from hpvm.target import Availability, Target


@pytest.fixture
def demo(tmp_path):
    program, inputs = save_demo(tmp_path, size=(4, 5))
    return program, inputs, tmp_path / "out.npz"


def run(program, inputs, outputs, *extra):
    return main(["run", str(program), "--inputs", str(inputs), "--outputs", str(outputs), *extra])


def test_run_writes_correct_outputs(demo):
    program, inputs, outputs = demo
    assert run(program, inputs, outputs, "--target", "interp") == 0
    image = np.load(inputs)["image"]
    with np.load(outputs) as saved:
        assert saved.files == ["blurred"]
        np.testing.assert_allclose(saved["blurred"], blur_reference(image), rtol=1e-6)
    assert sorted(os.listdir(outputs.parent)) == ["blur.hpvm", "blur_inputs.npz", "out.npz"]


def test_run_without_outputs_prints_them(demo, capsys):
    program, inputs, _ = demo
    assert main(["run", str(program), "--inputs", str(inputs)]) == 0
    assert capsys.readouterr().out.startswith("blurred: float32[4, 5]\n")


def write_inputs(folder, **arrays):
    path = folder / "bad_inputs.npz"
    np.savez(path, **arrays)
    return path


BAD_INPUTS = {
    "wrong name": dict(img=np.zeros((4, 5), np.float32)),
    "wrong dtype": dict(image=np.zeros((4, 5), np.float64)),
    "wrong rank": dict(image=np.zeros((4, 5, 2), np.float32)),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_are_refused_and_no_output_is_written(demo, capsys, case):
    program, _, outputs = demo
    inputs = write_inputs(outputs.parent, **BAD_INPUTS[case])
    assert run(program, inputs, outputs) == 1
    assert capsys.readouterr().err.startswith("hpvm: error: graph '@main'")
    assert not outputs.exists()


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_leave_an_existing_output_untouched(demo, case):
    program, _, outputs = demo
    outputs.write_bytes(b"previous results")
    inputs = write_inputs(outputs.parent, **BAD_INPUTS[case])
    assert run(program, inputs, outputs) == 1
    assert outputs.read_bytes() == b"previous results"


def test_file_that_is_not_an_npz_archive_is_refused(demo, capsys):
    program, _, outputs = demo
    junk = outputs.parent / "junk.npz"
    junk.write_text("not numpy")
    assert run(program, junk, outputs) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"hpvm: error: {junk}: cannot read the inputs: it is not an .npz archive")
    assert not outputs.exists()


def test_single_array_npy_file_is_refused(demo, capsys):
    program, _, outputs = demo
    single = outputs.parent / "single.npy"
    np.save(single, np.zeros((4, 5), np.float32))
    assert run(program, single, outputs) == 1
    assert "one unnamed array" in capsys.readouterr().err


def test_missing_inputs_file_is_named(demo, capsys):
    program, _, outputs = demo
    assert run(program, outputs.parent / "nope.npz", outputs) == 1
    assert capsys.readouterr().err == f"hpvm: error: {outputs.parent / 'nope.npz'}: No such file or directory\n"


def test_output_in_missing_folder_is_refused_before_running(demo, capsys):
    program, inputs, outputs = demo
    assert run(program, inputs, outputs.parent / "no" / "out.npz") == 1
    assert "folder" in capsys.readouterr().err


def test_unknown_target_suggests_a_close_name(demo, capsys):
    program, inputs, outputs = demo
    assert run(program, inputs, outputs, "--target", "interpp") == 1
    assert "unknown target 'interpp': did you mean 'interp'?" in capsys.readouterr().err


def install_only(monkeypatch, target: Target) -> None:
    """Make ``target`` the one plugin target every command sees."""
    class Plugin:
        @hpvm.hookimpl
        def hpvm_targets(self):
            return [target]

    registry = Registry(entry_points=[])
    registry.register(Plugin(), name=target.name)
    monkeypatch.setattr(registry_module, "_registry", registry)


def test_unavailable_target_is_refused_with_its_reason(demo, capsys, monkeypatch):
    class Missing(Target):
        name = "missing"

        def availability(self):
            return Availability.no("libvendor.so not found")

    install_only(monkeypatch, Missing())
    program, inputs, outputs = demo
    assert run(program, inputs, outputs, "--target", "missing") == 1
    assert capsys.readouterr().err == (
        "hpvm: error: target 'missing' is not available: libvendor.so not found\n")
    assert not outputs.exists()


def test_a_device_that_fails_mid_run_is_an_error_naming_the_node_and_target(
        demo, capsys, monkeypatch):
    from hpvm.interp.target import InterpTarget

    class Failing(InterpTarget):
        name = "failing"

        def load(self, artifact, options):
            device = super().load(artifact, options)

            def launch(node, args):
                raise RuntimeError("the device fell off the bus")
            device.launch = launch
            return device

    install_only(monkeypatch, Failing())
    program, inputs, outputs = demo
    assert run(program, inputs, outputs, "--target", "failing") == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error: graph '@main', node '")
    assert "target 'failing' failed while running it: RuntimeError: the device fell off the bus" in err
    assert not outputs.exists()
