"""movidius: OpenVINO decides what it claims, claimed nodes run as one
OpenVINO model per partition, and the results agree with onnxruntime and
the interpreter; refusals, rejections and missing devices fall back with
their reason."""
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
torch = pytest.importorskip("torch")

from hpvm.frontend.onnx import import_model, testing  # noqa: E402
from hpvm.interp import run_module  # noqa: E402
from hpvm.ir.text import load_module  # noqa: E402
from hpvm.options import OptionError  # noqa: E402
from hpvm.registry import get_registry  # noqa: E402
from hpvm.runtime import Executable, compile  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ir"
MOVIDIUS = get_registry().target("movidius")
pytestmark = pytest.mark.skipif(not MOVIDIUS.availability.available,
                                reason=MOVIDIUS.availability.reason)


def model_of(name):
    torch.manual_seed(0)
    if name == "lenet":
        return testing.lenet(), (1, 28, 28)
    return testing.resnet_block(8), (8, 12, 12)


@pytest.fixture(scope="module", params=["lenet", "resnet"])
def network(request):
    model, shape = model_of(request.param)
    proto = testing.export(model, shape)
    x = np.random.default_rng(1).standard_normal((3,) + shape).astype(np.float32)
    return import_model(proto), proto, x


def onnxruntime_output(proto, x):
    import onnxruntime
    session = onnxruntime.InferenceSession(proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_a_network_is_one_openvino_model_agreeing_with_onnxruntime(network):
    module, proto, x = network
    exe = compile(module, ["movidius"])
    assert set(exe.placement.targets.values()) == {"movidius"}
    [members] = exe.placement.partitions.values()
    assert len(members) == len(exe.placement.targets)
    np.testing.assert_allclose(exe(x=x)["y"], onnxruntime_output(proto, x), rtol=1e-4, atol=1e-5)
    assert [r.target for r in exe.report().records] == ["movidius"]


def test_each_batch_size_runs(network):
    module, _, x = network
    exe = compile(module, ["movidius"])
    for batch in (1, 3, 2):
        expected = run_module(module, {"x": x[:batch]})["y"]
        np.testing.assert_allclose(exe(x=x[:batch])["y"], expected, rtol=1e-4, atol=1e-5)


def test_runs_in_flight_together_get_their_own_requests(network):
    module, _, x = network
    exe = compile(module, ["movidius"])
    expected = [run_module(module, {"x": x[i:i + 1]})["y"] for i in range(3)]
    launches = [exe.launch(x=x[i:i + 1]) for i in range(3)]
    for launch, want in zip(launches, expected):
        np.testing.assert_allclose(launch.wait()["y"], want, rtol=1e-4, atol=1e-5)


def test_the_saved_executable_carries_openvino_ir(network, tmp_path):
    module, _, x = network
    exe = compile(module, ["movidius"])
    artifact = exe.artifacts["movidius"]
    stems = list(artifact.metadata["partitions"].values())
    assert {f"{stems[0]}.xml", f"{stems[0]}.bin"} <= set(artifact.files)
    assert b"<net " in artifact.files[f"{stems[0]}.xml"]
    exe.save(tmp_path / "net.hpvmx")
    loaded = Executable.load(tmp_path / "net.hpvmx")
    np.testing.assert_allclose(loaded(x=x)["y"], exe(x=x)["y"], rtol=1e-6)


class QueryDropping:
    """An OpenVINO Core whose device supports no operation of ``kind``."""

    def __init__(self, core, kind, reject_compile=False):
        self.core, self.kind, self.reject_compile = core, kind, reject_compile

    def __getattr__(self, name):
        return getattr(self.core, name)

    def query_model(self, model, device):
        supported = self.core.query_model(model, device)
        if self.reject_compile:
            return supported
        return {name: d for name, d in supported.items()
                if not any(op.get_friendly_name() == name and op.get_type_name() == self.kind
                           for op in model.get_ordered_ops())}

    def compile_model(self, model, *args, **kwargs):
        if self.reject_compile and any(op.get_type_name() == self.kind
                                       for op in model.get_ordered_ops()):
            raise RuntimeError(f"Exception from src/x.cpp:1:\n{self.kind} is not supported\n")
        return self.core.compile_model(model, *args, **kwargs)


@pytest.fixture
def lenet():
    model, shape = model_of("lenet")
    x = np.random.default_rng(2).standard_normal((2,) + shape).astype(np.float32)
    return import_model(testing.export(model, shape)), x


def test_what_the_device_does_not_support_falls_back_and_splits_the_partitions(
        lenet, monkeypatch):
    module, x = lenet
    target = get_registry().target("movidius").target  # the registry compile() uses now
    monkeypatch.setattr(target, "_core", QueryDropping(target.core(), "MaxPool"))
    exe = compile(module, ["movidius"])
    pools = [key for key in exe.placement.targets if "MaxPool" in key]
    assert pools and all(exe.placement.targets[k] == "cpu" for k in pools)
    assert all("does not support MaxPool" in exe.placement.reasons[k] for k in pools)
    # conv | pool | conv | pool | the rest: three OpenVINO models
    assert len(exe.placement.partitions) == 3
    np.testing.assert_allclose(exe(x=x)["y"], run_module(module, {"x": x})["y"],
                               rtol=1e-4, atol=1e-5)


def test_what_openvino_rejects_falls_back_with_its_message(lenet, monkeypatch):
    module, x = lenet
    target = get_registry().target("movidius").target  # the registry compile() uses now
    monkeypatch.setattr(target, "_core", QueryDropping(target.core(), "MaxPool",
                                                       reject_compile=True))
    exe = compile(module, ["movidius"])
    pools = [key for key in exe.placement.targets if "MaxPool" in key]
    assert all(exe.placement.targets[k] == "cpu" for k in pools)
    assert all("OpenVINO rejects it on CPU: MaxPool is not supported" in exe.placement.reasons[k]
               for k in pools)
    assert exe.placement.targets["@main.t0_Conv"] == "movidius"
    np.testing.assert_allclose(exe(x=x)["y"], run_module(module, {"x": x})["y"],
                               rtol=1e-4, atol=1e-5)


def test_a_device_that_is_not_there_leaves_every_node_to_the_fallback(lenet):
    module, x = lenet
    exe = compile(module, ["movidius"], options={"device": "GNA"})
    assert set(exe.placement.targets.values()) == {"cpu"}
    reason = exe.placement.reasons["@main.t0_Conv"]
    assert "movidius: OpenVINO device 'GNA' is not present (found: " in reason


def test_a_device_gone_at_load_runs_on_openvinos_cpu(lenet, tmp_path):
    module, x = lenet
    exe = compile(module, ["movidius"])
    artifact = exe.artifacts["movidius"]
    artifact.metadata["device"] = "NPU.7"  # compiled for a device this machine lacks
    device = MOVIDIUS.target.load(artifact, {})
    assert "on OpenVINO CPU" in device.timing_label and "'NPU.7' is not present" in device.timing_label


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_half_precision_is_asked_of_openvino_and_the_report_says_what_it_got(lenet, precision):
    module, x = lenet
    exe = compile(module, ["movidius"], options={"precision": precision})
    artifact = exe.artifacts["movidius"]
    core = MOVIDIUS.target.core()
    probe = core.compile_model(core.read_model(*_ir(artifact)), "CPU",
                               {"INFERENCE_PRECISION_HINT": precision.replace("fp", "f")})
    honoured = probe.get_property("INFERENCE_PRECISION_HINT").get_type_name() != "f32"
    said = f"precision {precision} asked, but OpenVINO's CPU device computes in f32"
    assert (said in "\n".join(exe.placement.notes)) == (not honoured)
    got = exe(x=x)["y"]
    np.testing.assert_allclose(got, run_module(module, {"x": x})["y"], rtol=5e-2, atol=1e-2)


def _ir(artifact):
    stem = next(iter(artifact.metadata["partitions"].values()))
    weights = np.frombuffer(artifact.files[stem + ".bin"], np.uint8).copy()
    return artifact.files[stem + ".xml"], ov.Tensor(weights)


def test_a_bad_option_value_names_the_choices(lenet):
    module, _ = lenet
    with pytest.raises(OptionError, match="performance_hint.*latency.*throughput"):
        compile(module, ["movidius"], options={"performance_hint": "fastest"})


def test_kernel_nodes_are_declined_with_the_reason():
    module = load_module(EXAMPLES / "blur.hpvm")
    exe = compile(module, ["movidius"])
    assert "movidius" not in exe.placement.targets.values()
    assert any("movidius: a kernel node: OpenVINO runs tensor ops" in r
               for r in exe.placement.reasons.values())


def test_a_hand_written_tensor_program_matches_the_interpreter():
    module = load_module(EXAMPLES / "lenet_tiny.hpvm")
    image = np.random.default_rng(3).uniform(0, 1, (5, 1, 8, 8)).astype(np.float32)
    exe = compile(module, ["movidius"])
    assert set(exe.placement.targets.values()) == {"movidius"}
    np.testing.assert_allclose(exe(image=image)["probabilities"],
                               run_module(module, {"image": image})["probabilities"],
                               rtol=1e-5, atol=1e-6)


def test_without_openvino_the_target_says_how_to_get_it(monkeypatch):
    import sys
    from hpvm_movidius.target import MovidiusTarget
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino fails
    availability = MovidiusTarget().availability()
    assert not availability.available and "pip install openvino" in availability.reason
