"""An executable shipping an approximation curve: it lists and switches
configurations (each computing what its knobs compute), keeps the curve
through save and load, moves along the curve to keep a latency goal under
a simulated slowdown and back when it passes, and refinement re-measures
the curve; ``hpvm approx`` and ``hpvm tune --refine`` do this from the
command line."""
import json
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from hpvm.cli import main
from hpvm.errors import HpvmError
from hpvm.passes.approximate import apply_knobs
from hpvm.runtime import Executable, compile
from hpvm.tune.approx import ApproxCurve, ApproxPoint
from hpvm.tune.approx.adaptation_plot import adaptation_svg
from hpvm.tune.approx.refine import refine

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
testing = pytest.importorskip("hpvm.frontend.onnx.testing")

KNOBS = [{}, {"t3_Conv": "samp-2-0"}, {"t3_Conv": "samp-2-0", "t0_Conv": "perf-rows-2-1"},
         {"t3_Conv": "samp-2-0+fp16", "t0_Conv": "perf-rows-2-1+fp16", "t7_Gemm": "fp16"}]
SPEEDUPS = [1.0, 1.3, 1.8, 2.5]


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    from hpvm.frontend.onnx import load
    train_x, train_y, images, labels, _ = testing.digits_split()
    torch.manual_seed(0)
    model = testing.train(testing.lenet_digits(), train_x, train_y, steps=300)
    proto = testing.export(model, (1, 8, 8))
    folder = tmp_path_factory.mktemp("lenet")
    (folder / "lenet.onnx").write_bytes(proto.SerializeToString())
    np.savez(folder / "data.npz", x=images, labels=labels)
    return load(proto), images, labels, folder


def curve_for(images):
    points = [ApproxPoint(knobs, 97.0 - i, speedup, 0.01 / speedup)
              for i, (knobs, speedup) in enumerate(zip(KNOBS, SPEEDUPS))]
    return ApproxCurve(points, "accuracy", "%", 97.0, "accuracy loss <= 3 points", ["aten"],
                       input_shapes={"x": list(images.shape)})


def shipped(module, images):
    exe = compile(module, ["aten"])
    exe.attach_approximations(curve_for(images))
    return exe


def test_use_switches_to_what_the_configuration_computes(lenet):
    module, images, _, _ = lenet
    exe = shipped(module, images)
    assert [c["speedup"] for c in exe.configurations()] == SPEEDUPS
    exact = exe(x=images)["y"]
    exe.use(2)
    expected = compile(apply_knobs(module, KNOBS[2]), ["aten"])(x=images)["y"]
    np.testing.assert_array_equal(exe(x=images)["y"], expected)
    assert exe.in_use == 2 and not np.array_equal(expected, exact)
    exe.use(KNOBS[0])
    np.testing.assert_array_equal(exe(x=images)["y"], exact)
    with pytest.raises(HpvmError, match="no configuration 9"):
        exe.use(9)
    exe.close()


def test_the_curve_survives_save_and_load(lenet, tmp_path):
    module, images, _, _ = lenet
    exe = shipped(module, images)
    exe.save(tmp_path / "exe")
    loaded = Executable.load(tmp_path / "exe")
    assert loaded.configurations() == exe.configurations()
    loaded.use(1)
    np.testing.assert_allclose(loaded(x=images)["y"],
                               compile(apply_knobs(module, KNOBS[1]), ["aten"])(x=images)["y"])


class SlowingClock:
    """A clock under which a run of configuration k takes
    ``base / speedup[k] * load`` seconds, ``load`` set by the test."""

    def __init__(self, exe, base: float):
        self.exe, self.base, self.load, self.now, self.calls = exe, base, 1.0, 0.0, 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0:  # the end of a run
            self.now += self.base / SPEEDUPS[self.exe.in_use] * self.load
        return self.now


def test_a_latency_goal_moves_along_the_curve_under_load_and_back(lenet):
    module, images, _, _ = lenet
    exe = shipped(module, images[:20])
    clock = SlowingClock(exe, base=0.010)
    exe.set_goal(latency_ms=12, window=3, clock=clock)
    for load in [1.0] * 6 + [2.0] * 12 + [1.0] * 12:
        clock.load = load
        exe(x=images[:20])
    used = [index for _, _, index in exe.adaptation_history()]
    assert used[:6] == [0] * 6
    assert max(used[6:18]) == 2 and used[17] == 2  # 10 ms * 2 / 1.8 = 11.1 ms fits
    assert used[-1] == 0
    assert all(seconds <= 0.012 for _, seconds, _ in exe.adaptation_history()[-3:])
    drawing = adaptation_svg(exe.adaptation_history(), exe.configurations(), 12,
                             load=[6 <= i < 18 for i in range(30)])
    assert ElementTree.fromstring(drawing).tag.endswith("svg") and "goal 12 ms" in drawing
    exe.set_goal(None)
    exe.close()


def test_refinement_measures_every_configuration_here(lenet):
    module, images, _, _ = lenet
    exe = shipped(module, images)
    curve = refine(exe, repeat=1)
    assert curve.points[0].speedup == 1.0 and curve.points[0].knobs == {}
    assert all(p.speedup > 1.0 for p in curve.points[1:])
    assert exe.configurations()[0]["speedup"] == 1.0
    assert "refined on" in curve.notes[-1]


def test_hpvm_approx_writes_the_executable_curve_and_svg(lenet, capsys):
    _, _, _, folder = lenet
    code = main(["approx", str(folder / "lenet.onnx"), "--qos", "accuracy", "--loss", "2",
                 "--data", str(folder / "data.npz"), "--targets", "aten", "--every", "2",
                 "--repeat", "1", "-o", str(folder / "lenet.hpvmx"),
                 "--svg", str(folder / "curve.svg"), "--curve", str(folder / "curve.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "predictive tuning:" in out and "done" in err
    assert json.loads((folder / "curve.json").read_text())["qos_name"] == "accuracy"
    ElementTree.fromstring((folder / "curve.svg").read_text())
    exe = Executable.load(folder / "lenet.hpvmx")
    assert exe.configurations()[0]["knobs"] == {}
    assert main(["tune", "--refine", str(folder / "lenet.hpvmx"), "--repeat", "1"]) == 0
    assert "configurations kept on" in capsys.readouterr().out


@pytest.mark.parametrize("extra, words", [
    (["--labels", "nope"], "no array 'nope' of labels"),
    (["--every", "1"], "give integers from 2 to 16"),
    (["--techniques", "magic"], "unknown technique"),
])
def test_hpvm_approx_explains_bad_requests(lenet, capsys, extra, words):
    _, _, _, folder = lenet
    code = main(["approx", str(folder / "lenet.onnx"), "--loss", "1",
                 "--data", str(folder / "data.npz"), "--targets", "aten"] + extra)
    assert code == 1 and words in capsys.readouterr().err


def test_refining_an_executable_without_a_curve_is_refused(lenet, tmp_path, capsys):
    module = lenet[0]
    compile(module, ["aten"]).save(tmp_path / "plain")
    assert main(["tune", "--refine", str(tmp_path / "plain")]) == 1
    assert "ships no approximation curve" in capsys.readouterr().err
