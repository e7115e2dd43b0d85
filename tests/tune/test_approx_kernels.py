"""Approximation tuning of programs written as kernels (image pipelines):
their nodes take perforation knobs, a PSNR floor is met by every
configuration on the curve, and nodes whose instances cannot be skipped
get no knobs."""
from pathlib import Path

import numpy as np

from hpvm.frontend.compile import load_python_file
from hpvm.passes.approximate import EXACT, apply_knobs
from hpvm.runtime import compile
from hpvm.runtime.compiler import as_module
from hpvm.tune.approx import approx_tune, approximable_nodes, knob_choices, psnr

from benchmarks.programs import camera

ROOT = Path(__file__).resolve().parents[2]
BLUR = load_python_file(ROOT / "examples" / "blur.py").blur3x3


def smooth_image(height=40, width=56) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    return (np.sin(x / 7) * np.cos(y / 5) + 0.01 * x).astype(np.float32)


def test_every_pipeline_stage_takes_row_and_column_perforation():
    module = as_module(camera.camera)
    assert approximable_nodes(module) == ["demosaic", "denoise", "colour", "gamut", "tone"]
    knobs = knob_choices(module, "denoise", every=(2, 3))
    assert knobs[0] == EXACT and "perf-rows-3-2" in knobs and "perf-cols-2-0" in knobs
    assert len(knobs) == 1 + 2 * (2 + 3)
    assert knob_choices(module, "denoise", techniques=("fp16",)) == [EXACT]


def test_a_blur_tuned_to_a_psnr_floor_meets_it_at_every_point():
    img = smooth_image()
    result = approx_tune(BLUR, ["interp"], {"img": img}, psnr(), minimum=30, every=(2, 3),
                         repeat=1, validate=6)
    module = as_module(BLUR)
    exact = compile(module, ["interp"])(img=img)["out"]
    assert result.curve.points[0].knobs == {}
    # Which configurations are faster depends on this machine's load; that
    # the validated ones kept their goal does not.
    assert result.agreement["validated"] >= 1 and result.empirical_runs < result.searched
    for point in result.curve.points[1:]:
        out = compile(apply_knobs(module, point.knobs), ["interp"])(img=img)["out"]
        assert psnr().score(out, exact) >= 30
        assert point.qos >= 30 and point.speedup > 1


def test_tuned_camera_configurations_compute_the_same_on_the_cpu_target():
    inputs = camera.make_inputs("small", np.random.default_rng(0))
    module = as_module(camera.camera)
    knobs = {"demosaic": "perf-rows-2-1", "denoise": "perf-cols-3-0", "tone": "perf-rows-4-3"}
    approximated = apply_knobs(module, knobs)
    expected = compile(approximated, ["interp"])(**inputs)["out"]
    got = compile(approximated, ["cpu"])(**inputs)["out"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    exact = compile(module, ["interp"])(**inputs)["out"]
    assert 20 < psnr().score(got, exact) < 100


def test_hpvm_approx_tunes_a_kernel_program_to_a_psnr_floor(tmp_path, capsys):
    from hpvm.cli import main
    np.savez(tmp_path / "scene.npz", img=smooth_image())
    code = main(["approx", str(ROOT / "examples" / "blur.py") + ":blur3x3", "--qos", "psnr",
                 "--min", "30", "--data", str(tmp_path / "scene.npz"), "--targets", "interp",
                 "--every", "2", "--repeat", "1", "--validate", "4",
                 "--svg", str(tmp_path / "curve.svg")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "within psnr >= 30 dB" in out and "predicted configurations met the goal" in out
    assert (tmp_path / "curve.svg").read_text().startswith("<svg")


def test_kernel_knobs_are_costed_by_what_they_saved_alone():
    from hpvm.tune.approx.cost import CostModel
    model = CostModel(as_module(BLUR), ["blur_x", "blur_y"], seconds=10.0)
    model.record("blur_x", "perf-rows-2-0", 8.0)
    model.record("blur_y", "perf-rows-2-0", 6.0)
    model.record("blur_y", "perf-cols-4-0", 11.0)    # slower alone: predicted slower
    assert model.predict({"blur_x": "perf-rows-2-0"}) == 8.0
    assert abs(model.predict({"blur_x": "perf-rows-2-0", "blur_y": "perf-rows-2-0"}) - 4.0) < 1e-9
    assert model.predict({"blur_y": "perf-cols-4-0"}) > 10.0
