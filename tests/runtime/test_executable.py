import importlib.util
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import ExecutionError, HpvmError, TargetError
from hpvm.registry import Registry
from hpvm.runtime import Executable, compile
from hpvm.runtime.loopback import LoopbackPlugin, LoopbackTarget

_spec = importlib.util.spec_from_file_location("runtime_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)

N = 64


@pytest.fixture
def loopback():
    return LoopbackTarget("loopback")


@pytest.fixture
def registry(loopback):
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(loopback), name="loopback-plugin")
    return registry


def vector(seed=0):
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def test_a_program_on_one_device_copies_nothing(registry):
    exe = compile(programs.chain(), targets=["interp"], registry=registry)
    a = vector()
    np.testing.assert_allclose(exe(a=a)["b"], (a * 2 + 1) * 3, rtol=1e-6)
    assert exe.report().bytes_copied == 0


def test_placement_and_report_print_in_a_line(registry):
    exe = compile(programs.chain(), targets=["interp"], registry=registry)
    exe(a=vector())
    nodes = len(exe.placement.targets)
    assert repr(exe.placement) == f"<Placement: {nodes} nodes (interp {nodes})>"
    assert str(exe.placement) == exe.placement.format()
    report = exe.report()
    assert repr(report).startswith(f"<Report: {len(report.node_records)} node runs, ")
    assert repr(report).endswith(" ms in nodes, 0 bytes copied>")


def test_nodes_follow_their_hints_and_the_rest_fall_back(registry):
    exe = compile(programs.chain(hints=(None, "loopback", None)), targets=["loopback"],
                  registry=registry)
    assert exe.placement.targets == {"@main.s": "interp", "@main.t": "loopback",
                                     "@main.u": "interp"}
    assert "fallback" in exe.placement.reasons["@main.s"]


def test_a_split_program_copies_only_what_crosses_devices(registry, loopback):
    exe = compile(programs.chain(hints=(None, "loopback", None)), targets=["loopback"],
                  registry=registry)
    a = vector()
    np.testing.assert_allclose(exe(a=a)["b"], (a * 2 + 1) * 3, rtol=1e-6)
    report = exe.report()
    by_node = {r.node: r for r in report.records}
    assert by_node["s"].copies.total == 0
    assert by_node["t"].copies.to_device == 4 * N  # s's output moves in
    assert by_node["u"].copies.to_host == 4 * N    # t's output moves back
    assert report.bytes_copied == 8 * N
    assert loopback.devices[0].store == {}  # device buffers were freed


def test_consecutive_nodes_on_one_device_keep_data_there(registry):
    exe = compile(programs.chain(hints=("loopback", "loopback", "loopback")),
                  targets=["loopback"], registry=registry)
    a = vector()
    np.testing.assert_allclose(exe(a=a)["b"], (a * 2 + 1) * 3, rtol=1e-6)
    assert exe.report().bytes_copied == 8 * N  # the input in, the result out


def test_an_in_place_update_does_not_disturb_another_reader(registry):
    for hints in [(None, None, None), ("loopback", "loopback", "loopback"),
                  ("loopback", None, "loopback")]:
        exe = compile(programs.diamond(hints), targets=["loopback"], registry=registry)
        a = vector()
        out = exe(a=a)
        np.testing.assert_allclose(out["c"], a * 4, rtol=1e-6)
        np.testing.assert_allclose(out["d"], a * 2 + 1, rtol=1e-6)


def test_staged_inputs_are_copied_once_and_reused_unchanged(registry):
    exe = compile(programs.diamond(("loopback", "loopback", "loopback")), targets=["loopback"],
                  registry=registry)
    a = vector()
    staged = exe.stage(a=a)
    for _ in range(3):
        out = exe(**staged)
        np.testing.assert_allclose(out["c"], a * 4, rtol=1e-6)
        np.testing.assert_allclose(out["d"], a * 2 + 1, rtol=1e-6)
        assert exe.report().bytes_copied == 8 * N  # only the two results come back
    with pytest.raises(ExecutionError, match="unknown input"):
        exe.stage(b=a)


def test_user_arrays_are_never_modified(registry):
    exe = compile(programs.diamond(), targets=["interp"], registry=registry)
    a = vector()
    before = a.copy()
    exe(a=a)
    np.testing.assert_array_equal(a, before)


class RendezvousTarget(LoopbackTarget):
    """Each launch waits until both nodes are running: a serial schedule
    would break the barrier."""

    def load(self, artifact, options):
        device = super().load(artifact, options)
        barrier = threading.Barrier(2, timeout=10)
        launch = device.launch

        def meet_then_launch(node, args):
            barrier.wait()
            return launch(node, args)

        device.launch = meet_then_launch
        return device


def test_independent_nodes_run_concurrently():
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(RendezvousTarget("meet")), name="meet")
    exe = compile(programs.parallel_pair("meet"), targets=["meet"], registry=registry)
    a = vector()
    out = exe(a=a)
    np.testing.assert_allclose(out["c"], a * 2)
    np.testing.assert_allclose(out["d"], a + 1)


def test_launch_returns_at_once_and_wait_gives_the_outputs(registry):
    exe = compile(programs.chain(), targets=["interp"], registry=registry)
    a = vector()
    running = exe.launch(a=a)
    np.testing.assert_allclose(running.wait(timeout=30)["b"], (a * 2 + 1) * 3, rtol=1e-6)
    assert running.done()


def test_streaming_results_come_out_in_push_order(registry):
    exe = compile(programs.chain(hints=(None, "loopback", None), streaming=True),
                  targets=["loopback"], registry=registry)
    frames = [vector(seed) for seed in range(10)]
    exe.start()
    for frame in frames:
        exe.push(a=frame)
    results = [exe.pop(timeout=30)["b"] for _ in frames]
    exe.close()
    for frame, result in zip(frames, results):
        np.testing.assert_allclose(result, (frame * 2 + 1) * 3, rtol=1e-6)


def test_calling_a_streaming_program_directly_is_refused(registry):
    exe = compile(programs.chain(streaming=True), targets=["interp"], registry=registry)
    with pytest.raises(HpvmError, match="push"):
        exe(a=vector())


@pytest.mark.parametrize("inputs, message", [
    ({}, "missing input"),
    ({"a": np.zeros(N, np.float64)}, "dtype"),
    ({"a": np.zeros((N, 2), np.float32)}, "rank"),
    ({"a": np.zeros(N, np.float32), "z": 1}, "unknown input"),
])
def test_bad_inputs_are_refused_before_anything_runs(registry, loopback, inputs, message):
    exe = compile(programs.chain(hints=("loopback", None, None)), targets=["loopback"],
                  registry=registry)
    with pytest.raises(ExecutionError, match=message):
        exe(**inputs)
    assert not any(d.launches for d in loopback.devices)


def test_unknown_target_names_the_installed_ones(registry):
    with pytest.raises(TargetError, match="loopback"):
        compile(programs.chain(), targets=["tpu"], registry=registry)


def test_saved_executables_load_back_and_run(registry, tmp_path):
    exe = compile(programs.chain(hints=(None, "loopback", None)), targets=["loopback"],
                  registry=registry)
    exe.save(tmp_path / "chain.hpvmx")
    loaded = Executable.load(tmp_path / "chain.hpvmx", registry=registry)
    assert loaded.placement.targets == exe.placement.targets
    a = vector()
    np.testing.assert_allclose(loaded(a=a)["b"], (a * 2 + 1) * 3, rtol=1e-6)


def test_saved_executables_run_in_another_process(tmp_path):
    exe = compile(programs.chain(), targets=["interp"], registry=Registry(entry_points=[]))
    exe.save(tmp_path / "chain.hpvmx")
    a = vector()
    np.save(tmp_path / "a.npy", a)
    script = (
        "import numpy as np, sys\n"
        "from hpvm.registry import Registry\n"
        "from hpvm.runtime import Executable\n"
        f"exe = Executable.load(r'{tmp_path / 'chain.hpvmx'}', registry=Registry(entry_points=[]))\n"
        f"out = exe(a=np.load(r'{tmp_path / 'a.npy'}'))\n"
        f"np.save(r'{tmp_path / 'b.npy'}', out['b'])\n")
    subprocess.run([sys.executable, "-c", script], check=True)
    np.testing.assert_allclose(np.load(tmp_path / "b.npy"), (a * 2 + 1) * 3, rtol=1e-6)


def fan_out_to_two_outputs():
    """One node's result bound to two root outputs, b and c."""
    from hpvm.ir.graph import BindIn, BindOut, Graph, Module
    from hpvm.ir.parameter import Parameter
    functions = {"double": programs.elementwise("double", lambda v: v * 2.0)}
    graph = Graph("main", (Parameter("a", programs.VECTOR, "in"), Parameter("b", programs.VECTOR, "out"),
                           Parameter("c", programs.VECTOR, "out")),
                  (programs.node("s", "double"),),
                  bind_ins=(BindIn("a", "s", "x"),),
                  bind_outs=(BindOut("s", "y", "b"), BindOut("s", "y", "c")))
    return Module("fan_out", functions, {"main": graph}, "main")


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_outputs_never_alias_each_other_or_a_later_run(target):
    exe = compile(fan_out_to_two_outputs(), targets=[target])
    a = vector()
    first = exe(a=a)
    assert not np.shares_memory(first["b"], first["c"])
    first["b"][:] = 0
    second = exe(a=a)
    np.testing.assert_array_equal(first["c"], a * 2)
    np.testing.assert_array_equal(second["b"], a * 2)
    assert not np.shares_memory(first["c"], second["c"])
    np.testing.assert_array_equal(a, vector())  # the input is untouched


def test_without_task_parallelism_every_node_runs_in_the_calling_thread(monkeypatch):
    from hpvm.interp.target import InterpTarget
    from hpvm.ir.text import load_module
    from hpvm.testing import random_inputs
    threads = set()
    launch = InterpTarget.load

    def recording_load(self, artifact, options):
        device = launch(self, artifact, options)
        original = device.launch

        def launch_here(node, args):
            threads.add(threading.current_thread().name)
            return original(node, args)
        device.launch = launch_here
        return device

    monkeypatch.setattr(InterpTarget, "load", recording_load)
    module = load_module(Path(__file__).resolve().parents[2] / "examples" / "ir" / "hierarchy.hpvm")
    inputs = random_inputs(module.root_graph, {"N": 5, "M": 4, "K": 3, "H": 4, "W": 5})
    serial = compile(module, targets=["interp"], options={"task_parallelism": False})
    parallel = compile(module, targets=["interp"])
    expected = parallel(**inputs)
    threads.clear()
    result = serial(**inputs)
    assert threads == {threading.current_thread().name}
    for name, value in expected.items():
        np.testing.assert_array_equal(result[name], value)
