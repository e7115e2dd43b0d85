"""Approximation tuning end to end on a LeNet trained on the digits (aten
on the CPU; about 2 s per tuning run): every configuration on the curve
meets the goal when run again, predictive tuning runs far fewer
configurations than it searches and reports how well it predicted,
empirical tuning works, a loss of 0 keeps only the exact program, and bad
requests are clear errors."""
import numpy as np
import pytest

from hpvm.passes.approximate import apply_knobs
from hpvm.runtime import compile
from hpvm.tune.approx import (
    ApproxError, ApproxPoint, accuracy, approx_tune, custom, knob_choices, psnr, ssim,
)
from hpvm.tune.approx.cost import CostModel
from hpvm.tune.approx.explore import Point, pareto

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
testing = pytest.importorskip("hpvm.frontend.onnx.testing")

SMALL = {"every": (2, 4), "techniques": ("fp16", "perforation", "sampling"), "repeat": 1}
"""Fewer knobs, one timed run each: these tests check behaviour, not speed."""


@pytest.fixture(scope="module")
def lenet():
    """(module, held-out images, labels) of a LeNet trained on the digits."""
    from hpvm.frontend.onnx import load
    train_x, train_y, images, labels, _ = testing.digits_split()
    torch.manual_seed(0)
    model = testing.train(testing.lenet_digits(), train_x, train_y, steps=300)
    return load(testing.export(model, (1, 8, 8))), images, labels


def measured_accuracy(module, knobs, images, labels):
    exe = compile(apply_knobs(module, knobs), ["aten"])
    return accuracy(labels).score(exe(x=images)["y"], None)


def test_every_configuration_on_the_curve_meets_the_goal(lenet):
    module, images, labels = lenet
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=3.0, **SMALL)
    curve = result.curve
    assert curve.points[0].knobs == {} and curve.points[0].speedup == 1.0
    for point in curve.points:
        assert point.qos >= curve.baseline_qos - 3.0
        assert point.qos == measured_accuracy(module, point.knobs, images, labels)
    assert all(p.speedup > 1.0 for p in curve.points[1:])
    assert [p.speedup for p in curve.points] == sorted(p.speedup for p in curve.points)
    assert result.empirical_runs < result.searched
    assert 0 < result.agreement["validated"] <= 12 + 6  # a second round may add half
    assert result.agreement["kept"] <= result.agreement["validated"]
    assert "predicted vs measured accuracy" in result.summary()


def test_empirical_tuning_runs_every_configuration_it_searches(lenet):
    module, images, labels = lenet
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=3.0,
                         mode="empirical", budget=12, **SMALL)
    assert result.searched == 12 and result.empirical_runs >= 12
    assert not result.agreement
    assert all(p.qos >= result.curve.baseline_qos - 3.0 for p in result.curve.points)


def test_a_loss_of_zero_returns_the_exact_program_alone(lenet):
    module, images, labels = lenet
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=0, **SMALL)
    assert [p.knobs for p in result.curve.points] == [{}]
    assert "only the exact program" in result.summary()


def test_progress_counts_up_to_the_planned_runs(lenet):
    module, images, labels = lenet
    seen = []
    approx_tune(module, ["aten"], {"x": images[:50]}, accuracy(labels[:50]), loss=5.0,
                progress=lambda label, done, total: seen.append((done, total)), **SMALL)
    assert seen and all(done <= total for done, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_a_qos_function_that_raises_is_named(lenet):
    module, images, _ = lenet

    def broken(outputs, reference):
        raise ZeroDivisionError("no")
    with pytest.raises(ApproxError, match="QoS function 'broken' raised ZeroDivisionError"):
        approx_tune(module, ["aten"], {"x": images}, custom(broken), loss=1.0, **SMALL)


def test_tuning_data_of_the_wrong_shape_is_refused(lenet):
    module, _, labels = lenet
    wrong = np.zeros((10, 1, 9, 9), np.float32)
    with pytest.raises(ApproxError, match="the tuning data does not fit the program"):
        approx_tune(module, ["aten"], {"x": wrong}, accuracy(labels), loss=1.0)


def test_labels_that_do_not_match_the_outputs_are_refused(lenet):
    module, images, labels = lenet
    with pytest.raises(ApproxError, match="one label per input row"):
        approx_tune(module, ["aten"], {"x": images}, accuracy(labels[:10]), loss=1.0)


def test_a_program_without_knob_ops_is_refused():
    from hpvm.ir.tensor_ops.testing import single_op_module
    module = single_op_module("relu", {"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(ApproxError, match="no node the approximation knobs apply to"):
        approx_tune(module, ["aten"], {"x": np.ones((2, 3), np.float32)}, psnr(), minimum=30)


@pytest.mark.parametrize("kwargs, words", [
    ({}, "not both or neither"), ({"loss": 1, "minimum": 2}, "not both or neither"),
    ({"loss": -1}, "negative"), ({"loss": 1, "mode": "guess"}, "mode 'guess'"),
])
def test_bad_goals_and_modes_are_refused(lenet, kwargs, words):
    module, images, labels = lenet
    with pytest.raises(ApproxError, match=words):
        approx_tune(module, ["aten"], {"x": images}, accuracy(labels), **kwargs)


def test_convs_get_perforation_and_sampling_knobs_pools_reduction_sampling(lenet):
    module = lenet[0]
    conv = knob_choices(module, "t0_Conv", every=(2,))
    assert conv[:2] == ["exact", "fp16"]
    assert {"perf-rows-2-1", "perf-cols-2-0+fp16", "samp-2-1"} <= set(conv)
    assert knob_choices(module, "t2_MaxPool", every=(2,)) == [
        "exact", "fp16", "redsamp-2-0", "redsamp-2-0+fp16", "redsamp-2-1", "redsamp-2-1+fp16"]
    assert knob_choices(module, "t7_Gemm") == ["exact", "fp16", "tf32"]


def test_a_precision_is_offered_only_where_a_tuning_target_computes_it(lenet):
    from hpvm.registry import get_registry
    module = lenet[0]
    aten, cpu = (get_registry().target(name).target for name in ("aten", "cpu"))
    assert knob_choices(module, "t0_Conv", ("tf32",), targets=[aten]) == ["exact", "tf32"]
    assert knob_choices(module, "t0_Conv", ("tf32",), targets=[cpu]) == ["exact"]
    assert knob_choices(module, "t0_Conv", ("tf32", "fp16"), targets=[cpu, aten]) == [
        "exact", "fp16", "tf32"]


def test_the_cost_model_counts_the_work_each_knob_skips(lenet):
    module = lenet[0]
    model = CostModel(module, ["t0_Conv", "t3_Conv"], seconds=1.0, precision_factors={"fp16": 0.5})
    share = model.costs["t0_Conv"] / model.total
    assert model.predict({}) == 1.0
    assert model.predict({"t0_Conv": "perf-rows-2-0"}) == pytest.approx(1 - share / 2)
    assert model.predict({"t0_Conv": "samp-4-0"}) == pytest.approx(1 - share / 4)
    assert model.predict({"t0_Conv": "fp16", "t3_Conv": "fp16"}) == pytest.approx(0.5)


def test_pareto_keeps_the_points_nothing_beats():
    points = [Point({"a": 1}, 90, 1.0), Point({"b": 1}, 95, 2.0), Point({"c": 1}, 89, 1.5),
              Point({"d": 1}, 95, 3.0)]
    assert [p.config for p in pareto(points)] == [{"a": 1}, {"b": 1}]


def test_psnr_and_ssim_are_perfect_for_identical_images_and_drop_with_noise():
    ramp = np.linspace(0, 1, 16)
    image = np.broadcast_to(np.add.outer(ramp, ramp) / 2, (2, 1, 16, 16))
    noisy = image + np.random.default_rng(1).normal(0, 0.1, image.shape)
    assert psnr().score(image, image) == 100.0
    assert 15 < psnr().score(noisy, image) < 25
    assert ssim().score(image, image) == pytest.approx(1.0)
    assert ssim().score(noisy, image) < 0.9


def test_the_curve_round_trips_as_json_and_draws_as_svg(lenet):
    import xml.etree.ElementTree as ElementTree
    from hpvm.tune.approx import ApproxCurve
    curve = ApproxCurve([ApproxPoint({}, 97.0, 1.0, 0.01),
                         ApproxPoint({"t0_Conv": "perf-rows-2-0"}, 96.0, 1.5, 0.0067, 96.2, 1.6)],
                        "accuracy", "%", 97.0, "accuracy loss <= 1 points", ["aten"])
    assert ApproxCurve.from_json(curve.to_json()) == curve
    root = ElementTree.fromstring(curve.svg())
    assert root.tag.endswith("svg") and "perf-rows-2-0" in curve.svg()
    assert "1.50x" in curve.format()


def test_when_predictions_were_too_hopeful_a_second_round_validates_inside_the_goal(
        lenet, monkeypatch):
    """pi1 with a profile that promises a quarter of each knob's real
    loss: the first round mostly misses the goal, the second looks further
    inside it."""
    from hpvm.tune.approx import tuner
    module, images, labels = lenet
    real_profile = tuner.profile

    def hopeful(runner, choices, qos, progress):
        known = real_profile(runner, choices, qos, progress)
        base = known.baseline_score
        known.scores = {key: base - (base - score) / 4 for key, score in known.scores.items()}
        return known
    monkeypatch.setattr(tuner, "profile", hopeful)
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=0.5,
                         model="pi1", validate=6, **SMALL)
    assert result.agreement["validated"] > 6
    assert sum("validated more" in note for note in result.curve.notes) == 1
    assert all(p.qos >= result.curve.baseline_qos - 0.5 for p in result.curve.points)


def test_int8_knobs_come_from_calibrating_on_the_tuning_data(lenet):
    module, images, labels = lenet
    assert knob_choices(module, "t0_Conv", ("int8",)) == ["exact"]  # not calibrated yet
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=3.0,
                         techniques=("int8", "perforation"), every=(2,), repeat=1)
    tuned = result.module
    calibrated = {n.name for n in tuned.root_graph.nodes if "int8_scales" in n.attributes}
    assert {"t0_Conv", "t3_Conv", "t7_Gemm"} <= calibrated
    assert knob_choices(tuned, "t7_Gemm", ("int8",)) == ["exact", "int8"]
    assert "perf-rows-2-0+int8" in knob_choices(tuned, "t0_Conv", ("int8", "perforation"),
                                                 every=(2,))
    all_int8 = {name: "int8" for name in calibrated}
    assert measured_accuracy(tuned, all_int8, images, labels) >= result.curve.baseline_qos - 3
    for point in result.curve.points:
        assert point.qos == measured_accuracy(tuned, point.knobs, images, labels)


def test_profiled_configurations_that_meet_the_goal_reach_the_curve(lenet, monkeypatch):
    """With no validation runs at all, the curve still holds what the
    profile measured (timings made deterministic: every approximated
    node saves a tenth)."""
    from hpvm.interp import run_module
    from hpvm.tune.approx import measure
    module, images, labels = lenet

    def run(self, variant):
        changed = sum(a != b for a, b in zip(variant.root_graph.nodes, module.root_graph.nodes))
        outputs = run_module(variant, self.inputs)["y"]
        return measure.Measurement(outputs, 1.0 - 0.1 * changed)
    monkeypatch.setattr(measure.Runner, "_run", run)
    result = approx_tune(module, ["aten"], {"x": images}, accuracy(labels), loss=3.0,
                         validate=0, **SMALL)
    assert result.agreement["validated"] == 0
    assert len(result.curve.points) > 1
    for point in result.curve.points[1:]:
        assert len(point.knobs) == 1 or set(point.knobs.values()) == {"fp16"}
        assert point.qos >= result.curve.baseline_qos - 3.0
