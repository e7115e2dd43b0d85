"""The static schedule (runtime/static_run.py): the same results as the
dynamic scheduler (an in-place update of a value read later, and of a
program output, works on a copy), outputs that start zeroed in every run, arena buffers
reused, bound launches that follow each run's arrays and scalars; a
program wholly on a device of its own memory keeps its buffers there, and
runs as one replay where that device captures launches."""
import importlib.util
import threading
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir.text import parse_module
from hpvm.registry import Registry
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackDevice, LoopbackPlugin, LoopbackTarget
from hpvm.runtime import static_planner
from hpvm.runtime.static_run import StaticProgram

_spec = importlib.util.spec_from_file_location("runtime_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)

PROGRAM = """hpvm 1.0
module static_run

func @scale(in x: f32[N], in s: f32, out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * s
}

func @accumulate(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = y[i] + x[i]
}

func @bump(inout x: f32[N]) {
  let i: i64 = instance_id(0)
  x[i] = x[i] + f32(1.0)
}

func @add(in x: f32[N], in z: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + z[i]
}

graph @main(in a: f32[N], in s: f32, out sum: f32[N], out kept: f32[N], out bumped: f32[N],
            out bumped2: f32[N], out mid: f32[N]) {
  node first = @scale [N]
  node second = @accumulate [N]
  node updater = @bump [N]
  node third = @accumulate [N]
  node updater2 = @bump [N]
  node reader = @add [N]
  edge first.y -> second.x all-to-all
  edge first.y -> updater.x all-to-all
  edge second.y -> updater2.x all-to-all
  edge second.y -> third.x all-to-all
  edge third.y -> reader.x all-to-all
  edge first.y -> reader.z all-to-all
  in a -> first.x
  in s -> first.s
  out reader.y -> sum
  out third.y -> kept
  out updater.x -> bumped
  out updater2.x -> bumped2
  out second.y -> mid
}

root @main
"""


def expected(a, s):
    first = a * s
    return {"sum": first + first, "kept": first, "bumped": first + 1, "bumped2": first + 1,
            "mid": first}


def check(outputs, a, s):
    for name, value in expected(a, s).items():
        np.testing.assert_allclose(outputs[name], value, rtol=1e-6, err_msg=name)


def run_side_by_side(worker, seeds) -> None:
    """``worker(seed)`` for every seed, each in a thread of its own, at once."""
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture(scope="module")
def module():
    return parse_module(PROGRAM)


@pytest.mark.parametrize("per_run_bytes", [static_planner.PER_RUN_BYTES, 0])
@pytest.mark.parametrize("target,options", [("cpu", {}),
                                            ("interp", {"task_parallelism": False})])
def test_runs_repeat_exactly_with_new_inputs_scalars_and_shapes(module, target, options,
                                                                per_run_bytes, monkeypatch):
    monkeypatch.setattr(static_planner, "PER_RUN_BYTES", per_run_bytes)  # 0: no arena at all
    if per_run_bytes == 0:  # and the cpu clears and copies with its pool, at any size
        import hpvm_cpu.device
        monkeypatch.setattr(hpvm_cpu.device, "PARALLEL_CLEAR_BYTES", 0)
    exe = compile(module, targets=[target], options=options)
    assert isinstance(exe._static_program(), StaticProgram)
    rng = np.random.default_rng(0)
    for n, s in ((64, 2.0), (64, -0.5), (64, -0.5), (9, 3.0), (64, 1.5)):
        a = rng.standard_normal(n).astype(np.float32)
        before = a.copy()
        check(exe(a=a, s=s), a, s)  # accumulate reads zeros: outputs start zeroed each run
        np.testing.assert_array_equal(a, before)


def test_outputs_belong_to_the_caller(module):
    exe = compile(module, targets=["cpu"])
    a = np.ones(16, np.float32)
    first = exe(a=a, s=1.0)
    second = exe(a=a, s=1.0)
    for name in first:
        assert not np.shares_memory(first[name], second[name])
    first["kept"][:] = 7
    check(exe(a=a, s=1.0), a, 1.0)


def test_the_report_lists_every_node_in_order(module):
    exe = compile(module, targets=["cpu"])
    exe(a=np.ones(8, np.float32), s=1.0)
    assert [r.node for r in exe.report().records] == \
        ["first", "second", "updater", "third", "updater2", "reader"]


def test_a_dead_intermediate_buffer_is_reused():
    chain = PROGRAM.split("graph @main")[0] + """graph @main(in a: f32[N], in s: f32, out b: f32[N]) {
  node n1 = @scale [N]
  node n2 = @accumulate [N]
  node n3 = @accumulate [N]
  node n4 = @accumulate [N]
  edge n1.y -> n2.x all-to-all
  edge n2.y -> n3.x all-to-all
  edge n3.y -> n4.x all-to-all
  in a -> n1.x
  in s -> n1.s
  out n4.y -> b
}

root @main
"""
    exe = compile(parse_module(chain), targets=["cpu"])
    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(exe(a=a, s=2.0)["b"], a * 2)
    schedule = exe._static_program().schedules.idle()[0]
    arena = [v for v in schedule.kept if v is not None]
    assert len(arena) == 2  # n1.y and n2.y; n3.y takes n1.y's buffer


def test_concurrent_runs_each_get_their_own_buffers(module):
    exe = compile(module, targets=["cpu"])
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = rng.standard_normal(32).astype(np.float32)
            s = float(rng.uniform(-2, 2))
            try:
                check(exe(a=a, s=s), a, s)
            except AssertionError as error:
                failures.append(error)
    run_side_by_side(worker, seeds=range(4))
    assert not failures
    launched = exe.launch(a=np.ones(4, np.float32), s=2.0)
    check(launched.wait(), np.ones(4, np.float32), 2.0)


def test_a_failing_launch_names_the_node(module, monkeypatch):
    from hpvm.interp.target import InterpDevice
    exe = compile(module, targets=["interp"], options={"task_parallelism": False})

    def broken(self, node, args):
        raise RuntimeError("device lost")
    monkeypatch.setattr(InterpDevice, "launch", broken)
    with pytest.raises(ExecutionError, match="first.*device lost"):
        exe(a=np.ones(4, np.float32), s=1.0)


def test_interp_with_task_parallelism_keeps_the_dynamic_scheduler(module):
    assert compile(module, targets=["interp"])._static_program() is None


class CapturingDevice(LoopbackDevice):
    """A device of its own memory whose launches can be captured: a
    replay here runs the recorded launches again."""

    graph_capture = True

    def __init__(self, inner, name):
        super().__init__(inner, name)
        self.captures = self.replays = 0

    def capture(self, run):
        self.captures += 1

        def replay():
            self.replays += 1
            run()
        return replay


class CapturingTarget(LoopbackTarget):
    def load(self, artifact, options):
        return CapturingDevice(super().load(artifact, options).inner, self.name)


def registry_of(target):
    """A registry holding ``target`` alone (through the loopback plugin)."""
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(target), name=target.name)
    return registry


@pytest.fixture
def capturing():
    return registry_of(CapturingTarget("capture", claim_all=True))


def test_a_program_on_one_capturing_device_runs_as_one_replay(capturing):
    exe = compile(programs.chain(), targets=["capture"], registry=capturing)
    device = exe._get_devices()["capture"]
    rng = np.random.default_rng(1)
    previous = None
    for n in (16, 16, 5, 16):
        a = rng.standard_normal(n).astype(np.float32)
        before = a.copy()
        out = exe(a=a)
        np.testing.assert_allclose(out["b"], (a * 2 + 1) * 3, rtol=1e-6)
        np.testing.assert_array_equal(a, before)
        assert previous is None or not np.shares_memory(out["b"], previous)
        previous = out["b"]
    assert device.captures == 2 and device.replays == 4  # one capture per shape
    records = exe.report().records
    assert [r.node for r in records] == ["<captured graph>"]
    assert records[0].copies.to_device == 16 * 4 and records[0].copies.to_host == 16 * 4


def test_capture_needs_the_whole_program_on_the_device(capturing):
    capturing.register(LoopbackPlugin(LoopbackTarget("loopback")), name="loopback-plugin")
    exe = compile(programs.chain(hints=(None, "loopback", None)), targets=["capture", "loopback"],
                  registry=capturing)
    out = exe(a=np.ones(8, np.float32))
    np.testing.assert_allclose(out["b"], 9.0)
    assert exe._static_program() is None
    assert exe._get_devices()["capture"].captures == 0


RESIDENT = PROGRAM.split("graph @main")[0] + """graph @main(in a: f32[N], in s: f32, out total: f32[N],
            out scaled: f32[N]) {
  node first = @scale [N]
  node second = @accumulate [N]
  edge first.y -> second.x all-to-all
  in a -> first.x
  in s -> first.s
  out second.y -> total
  out first.y -> scaled
}

root @main
"""


BUMP = PROGRAM.split("graph @main")[0] + """graph @main(in a: f32[N], out b: f32[N]) {
  node bump = @bump [N]
  in a -> bump.x
  out bump.x -> b
}

root @main
"""


@pytest.fixture
def own_memory():
    return registry_of(LoopbackTarget("own", claim_all=True))


def test_a_program_wholly_on_a_device_of_its_own_memory_keeps_its_buffers_there(own_memory):
    exe = compile(parse_module(RESIDENT), targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    device = exe._get_devices()["own"]
    assert exe._static_program().resident is device
    rng = np.random.default_rng(2)
    buffers = []
    for n, s in ((16, 2.0), (16, -1.0), (16, 0.5), (7, 3.0), (16, 1.5)):
        a = rng.standard_normal(n).astype(np.float32)
        out = exe(a=a, s=s)
        # accumulate reads its output: made cleared in every run
        np.testing.assert_allclose(out["total"], a * np.float32(s), rtol=1e-6)
        np.testing.assert_allclose(out["scaled"], a * np.float32(s), rtol=1e-6)
        buffers.append(len(device.store))
    # kept: a's buffer and scale's output (written whole), per shape; total's
    # buffer is made and freed in each run
    assert buffers == [2, 2, 2, 4, 4]
    records = exe.report().records
    assert [r.node for r in records] == ["<inputs>", "first", "second", "<outputs>"]
    assert (records[0].copies.to_device, records[-1].copies.to_host) == (16 * 4, 2 * 16 * 4)


def test_concurrent_runs_on_a_device_of_its_own_memory_each_get_their_own_buffers(own_memory):
    exe = compile(parse_module(RESIDENT), targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = rng.standard_normal(32).astype(np.float32)
            s = np.float32(rng.uniform(-2, 2))
            out = exe(a=a, s=s)
            if not np.allclose(out["total"], a * s) or not np.allclose(out["scaled"], a * s):
                failures.append(seed)
    run_side_by_side(worker, seeds=range(4))
    assert not failures
    assert exe._static_program() is not None


def test_a_device_of_its_own_memory_keeps_the_dynamic_scheduler_for_task_parallelism(
        own_memory):
    exe = compile(parse_module(RESIDENT), targets=["own"], registry=own_memory)
    assert exe._static_program() is None
    a = np.ones(8, np.float32)
    np.testing.assert_allclose(exe(a=a, s=2.0)["total"], 2.0)


def test_updates_in_place_on_a_device_of_its_own_memory_work_on_its_copies(module, own_memory):
    exe = compile(module, targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    assert exe._static_program() is not None
    device = exe._get_devices()["own"]
    rng = np.random.default_rng(3)
    buffers = []
    for s in (2.0, -1.0, 0.5):
        a = rng.standard_normal(8).astype(np.float32)
        before = a.copy()
        check(exe(a=a, s=s), a, s)
        np.testing.assert_array_equal(a, before)
        buffers.append(len(device.store))
    assert buffers[0] == buffers[1] == buffers[2]  # the runs' copies are freed


def test_an_input_updated_in_place_on_a_device_of_its_own_memory_is_fresh_in_every_run(
        own_memory):
    exe = compile(parse_module(BUMP), targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    assert exe._static_program() is not None
    a = np.arange(6, dtype=np.float32)
    for _ in range(3):  # the kept input buffer is the update's: copied in again each run
        np.testing.assert_array_equal(exe(a=a)["b"], np.arange(6) + 1)
    np.testing.assert_array_equal(a, np.arange(6))


def test_staged_inputs_run_from_the_static_schedule_without_copies(own_memory):
    exe = compile(parse_module(RESIDENT), targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    a = np.arange(8, dtype=np.float32)
    staged = exe.stage(a=a)
    for s in (2.0, -1.0):
        out = exe(**staged, s=s)
        np.testing.assert_allclose(out["total"], a * np.float32(s))
        records = exe.report().records
        assert records[0].node == "<inputs>" and records[0].copies.to_device == 0
        assert exe.report().bytes_copied == 2 * 8 * 4  # the two results only
    assert exe._static_program() is not None


def test_a_staged_input_updated_in_place_is_left_as_staged(own_memory):
    exe = compile(parse_module(BUMP), targets=["own"], registry=own_memory,
                  options={"task_parallelism": False})
    a = np.arange(6, dtype=np.float32)
    staged = exe.stage(a=a)
    for _ in range(3):  # the update works on a device copy: the staged buffer stays a
        np.testing.assert_array_equal(exe(**staged)["b"], np.arange(6) + 1)
        assert exe.report().records[0].copies.to_device == 0


def test_staged_inputs_of_a_host_memory_program_run_from_the_static_schedule(module):
    exe = compile(module, targets=["cpu"])
    a = np.linspace(-1, 1, 16, dtype=np.float32)
    staged = exe.stage(a=a)
    check(exe(**staged, s=2.0), a, 2.0)
    assert exe._static_program().schedules.idle()  # the run took (and gave back) a static schedule


def test_inputs_are_checked_in_full_after_a_good_call(module):
    exe = compile(module, targets=["cpu"])
    good = np.ones(6, np.float32)
    check(exe(a=good, s=1.0), good, 1.0)
    with pytest.raises(ExecutionError, match="expects dtype float32"):
        exe(a=good.astype(np.float64), s=1.0)
    with pytest.raises(ExecutionError, match="unknown input"):
        exe(a=good, s=1.0, b=good)
    strided = np.ones(12, np.float32)[::2]  # not dense: copied, then run
    check(exe(a=strided, s=2.0), strided, 2.0)
    from hpvm.runtime.inputs import InputChecker
    checker = InputChecker(module.root_graph)
    with pytest.raises(ExecutionError, match="missing input"):
        checker.check({"a": good})
    # A scalar joins the signature by value, normalised once.
    checked = checker.check({"a": good, "s": 1.0})
    assert type(checked["s"]) is np.float32 and checked["a"] is good
    again = checker.check({"a": good, "s": 1.0})
    assert type(again["s"]) is np.float32 and again["a"] is good
    assert len(checker._passed) == 1
    checker.check({"a": good, "s": 2.0})   # another value: checked in full, then kept
    assert len(checker._passed) == 2
    with pytest.raises(ExecutionError, match="expects a scalar"):
        checker.check({"a": good, "s": np.ones(2)})
    assert len(checker._passed) == 2


SCALE = PROGRAM[:PROGRAM.index("graph @main")] + """\
graph @main(in a: f32[N], in s: f32, out y: f32[N]) {
  node first = @scale [N]
  in a -> first.x
  in s -> first.s
  out first.y -> y
}

root @main
"""


@pytest.mark.parametrize("zero", [0.0, np.float32(0.0), np.float64(0.0)])
def test_a_scalar_of_the_other_sign_is_another_input(zero):
    """0.0 and -0.0 are equal numbers: the signature tells them apart."""
    exe = compile(parse_module(SCALE), targets=["cpu"])
    a = -np.ones(4, np.float32)
    for s in (zero, -zero, zero):
        assert np.signbit(exe(a=a, s=s)["y"]).all() == (not np.signbit(s))


CHAIN = PROGRAM[:PROGRAM.index("graph @main")] + """\
graph @main(in a: f32[N], in s: f32, out y: f32[N]) {
  node first = @scale [N]
  node second = @accumulate [N]
  node third = @scale [N]
  edge first.y -> second.x all-to-all
  edge second.y -> third.x all-to-all
  in a -> first.x
  in s -> first.s
  in s -> third.s
  out third.y -> y
}

root @main
"""


@pytest.mark.parametrize("target,options,arena", [("cpu", {}, True), ("cpu", {"threads": 1}, False),
                                                  ("interp", {}, False)])
def test_a_large_intermediate_is_cleared_in_the_arena_where_the_device_clears_on_every_core(
        target, options, arena, monkeypatch):
    """The cpu clears on every core (parallel_clear): a large intermediate
    its node reads before writing stays in the arena, cleared in each run;
    the interpreter's, and the cpu's on one thread, is made afresh in each
    run."""
    import hpvm_cpu.device
    monkeypatch.setattr(static_planner, "PER_RUN_BYTES", 0)
    monkeypatch.setattr(hpvm_cpu.device, "PARALLEL_CLEAR_BYTES", 0)  # the pool, at any size
    exe = compile(parse_module(CHAIN), targets=[target],
                  options={"task_parallelism": False, **options})
    rng = np.random.default_rng(1)
    for n in (5000, 5000, 77, 5000):
        a, s = rng.standard_normal(n).astype(np.float32), float(rng.uniform(1, 2))
        np.testing.assert_allclose(exe(a=a, s=s)["y"], a * s * s, rtol=1e-6)
    schedule = exe._static_program().schedules.idle()[0]
    zeroed = [slot for step in schedule.steps for slot in step.zero]
    assert len(zeroed) == (1 if arena else 0)
    assert len(schedule.fresh) == (1 if arena else 2)   # the output (and the intermediate)
