"""fpga_aoc end to end: the generated single-work-item OpenCL, emulation
(on an OpenCL device where one works, on the host always) against the
interpreter, saved executables, aoc when present, and the model through
hpvm tune."""
import os
import stat
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.errors import HpvmError
from hpvm.frontend.compile import load_python_file
from hpvm.registry import get_registry
from hpvm.target import NodeRef
from hpvm.testing import check_against_interpreter, usable_targets

ROOT = Path(__file__).resolve().parents[3]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
EMULATORS = ["host"] + (["opencl"] if "gpu_opencl" in usable_targets(("gpu_opencl",)) else [])
TUNE_CHAIN = ROOT / "tests" / "tune" / "chain.hpvm"


def target():
    return get_registry().target("fpga_aoc").target


def stencil():
    from benchmarks.programs.ms_stencil2d import ms_stencil2d, make_inputs
    return ms_stencil2d.build(), make_inputs("small", np.random.default_rng(0))


def test_kernels_are_single_work_items_with_loops_and_pragmas():
    module, _ = stencil()
    artifact = target().compile(module, [NodeRef("ms_stencil2d", "stencil2d")],
                                {"emulator": "host"})
    source = artifact.files["kernels.cl"].decode()
    assert "__attribute__((max_global_work_dim(0)))\n__kernel void hpvm_k_stencil2d(" in source
    assert "__global const int* restrict orig" in source
    assert source.count("#pragma ivdep array(sol)") == 2   # both instance loops
    assert "for (long k1 = 0L; k1 < 3L; k1 += 1)" in source
    assert "goto" not in source and "get_global_id" not in source
    assert "host_plan.json" in artifact.files and "module.hpvm" in artifact.files


def test_unroll_hints_become_pragmas():
    from hpvm.ir.text import parse_module
    text = TUNE_CHAIN.read_text().replace("step 1 {", "step 1 [unroll = 4] {", 1)
    module = parse_module(text)
    nodes = [NodeRef(module.root_graph.name, n.name) for n in module.root_graph.nodes]
    source = target().compile(module, nodes, {"emulator": "host"}).files["kernels.cl"].decode()
    assert "#pragma unroll 4" in source


@pytest.mark.parametrize("emulator", EMULATORS)
@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_program_in_emulation_matches_the_interpreter(program, emulator):
    module = program.build()
    rng = np.random.default_rng(1)
    inputs = program.make_inputs(rng)
    frames = program.make_frames(rng) if program.make_frames else None
    check_against_interpreter(module, inputs, ["fpga_aoc", "cpu"], frames,
                              rtol=max(program.rtol, 1e-5), atol=max(program.atol, 1e-6),
                              options={"fpga_aoc": {"emulator": emulator}})


@pytest.mark.parametrize("emulator", EMULATORS)
def test_emulated_timings_and_placement_say_emulation(emulator, tmp_path):
    module, inputs = stencil()
    exe = hpvm.compile(module, targets=["fpga_aoc"], options={"emulator": emulator})
    assert "EMULATION" in exe.placement.format()
    exe(**inputs)
    assert "fpga_aoc (emulated" in exe.report().format()
    exe.save(tmp_path / "saved")
    loaded = hpvm.load(tmp_path / "saved")
    np.testing.assert_array_equal(loaded(**inputs)["sol"], exe(**inputs)["sol"])


@pytest.mark.skipif("opencl" not in EMULATORS, reason="no OpenCL device for the emulation")
@pytest.mark.parametrize("asynchronous", [True, False])
def test_dfg_dependencies_travel_as_opencl_events_by_default(asynchronous):
    """A chain of kernels: by default each waits for its producer on the
    device (events), not on the host; either way the result is exact."""
    from hpvm.ir.text import parse_module
    module = parse_module(TUNE_CHAIN.read_text())
    options = {"emulator": "opencl"} if asynchronous else {"emulator": "opencl",
                                                           "asynchronous": False}
    exe = hpvm.compile(module, targets=["fpga_aoc"], options=options)
    inputs = {"a": np.arange(64, dtype=np.float32), "bias": np.ones(3, np.float32)}
    expected = hpvm.compile(module, targets=["interp"])(**inputs)
    for _ in range(3):
        np.testing.assert_array_equal(exe(**inputs)["c"], expected["c"])
    label = "fpga_aoc (emulated; asynchronous: launch times)" if asynchronous \
        else "fpga_aoc (emulated)"
    assert label in exe.report().format()


def _fake_aoc(folder: Path, exit_code: int = 0) -> None:
    """An ``aoc`` that writes what the real one writes (reports; with -o a
    bitstream) or fails like it."""
    script = folder / "aoc"
    script.write_text(f"""#!/bin/sh
echo "aoc: compiling $@"
if [ {exit_code} -ne 0 ]; then echo "kernels.cl:3: error: unsupported thing" >&2; exit {exit_code}; fi
mkdir -p kernels/reports/lib/json
echo '{{"loops": []}}' > kernels/reports/lib/json/loop_attr.json
case "$*" in *-o*) echo bitstream > kernels.aocx;; esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_aoc_on_path_writes_its_reports_into_the_artifact(tmp_path, monkeypatch):
    _fake_aoc(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    module, inputs = stencil()
    exe = hpvm.compile(module, targets=["fpga_aoc"], options={"emulator": "host"})
    artifact = exe.artifacts["fpga_aoc"] if hasattr(exe, "artifacts") else None
    assert "aoc wrote its reports" in exe.placement.format()
    if artifact is not None:
        assert "aoc/kernels/reports/lib/json/loop_attr.json" in artifact.files
    np.testing.assert_array_equal(exe(**inputs)["sol"],
                                  hpvm.compile(module, targets=["interp"])(**inputs)["sol"])


def test_a_failing_aoc_is_an_error_with_its_log(tmp_path, monkeypatch):
    _fake_aoc(tmp_path, exit_code=1)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    module, _ = stencil()
    with pytest.raises(HpvmError, match="(?s)aoc failed.*unsupported thing.*kept in"):
        hpvm.compile(module, targets=["fpga_aoc"], options={"emulator": "host"})


def test_estimate_needs_sizes_or_says_how_to_give_them():
    module, _ = stencil()
    with pytest.raises(HpvmError, match="--inputs.*trip_count"):
        target().estimate(module, [NodeRef("ms_stencil2d", "stencil2d")], {})


def test_tuning_with_the_model_unrolls_the_stencil(tmp_path):
    from hpvm.tune import tune
    module, inputs = stencil()
    result = tune(module, ["fpga_aoc"], inputs, budget=12, mode="estimate", engine="random",
                  seed=1)
    assert result.speedup > 10   # unrolled 3x3 loops let the instance loop pipeline
    assert any("unroll" in line for line in result.summary().splitlines())


def test_an_objective_the_model_does_not_give_is_named():
    from hpvm.tune import tune
    module, inputs = stencil()
    result = tune(module, ["fpga_aoc"], inputs, budget=1, mode="estimate", objectives=["speed"])
    error = result.record.samples[0].error
    assert "give no 'speed'" in error and "seconds" in error


@pytest.mark.parametrize("emulator", EMULATORS)
def test_unrolled_instance_loops_compute_the_same_and_are_estimated_faster(emulator):
    from hpvm.runtime.sizes import node_sizes
    module, inputs = stencil()
    ref = NodeRef("ms_stencil2d", "stencil2d")
    knobs = target().knobs(module, [ref])
    assert [(k.name, k.node) for k in knobs] == [("unroll_instances", ref), ("input_buffering", ref)]
    options = {"emulator": emulator, "unroll_instances": {"stencil2d": 4}}
    artifact = target().compile(module, [ref], options)
    assert "#pragma unroll 4\n" in artifact.files["kernels.cl"].decode()
    check_against_interpreter(module, inputs, ["fpga_aoc"], options={"fpga_aoc": options})
    sizes = node_sizes(module, inputs)
    plain = target().estimate(module, [ref], {}, sizes=sizes)
    unrolled = target().estimate(module, [ref], {"unroll_instances": 4}, sizes=sizes)
    assert unrolled["seconds"] < plain["seconds"] / 3 and unrolled["alms"] > plain["alms"]


SCALE = """hpvm 1.0
module m

func @k(in x: f32[N], out y: f32[N]) {
  for i in 0 .. N step 1 {
    y[i] = x[i] * f32(2)
  }
}

graph @g(in x: f32[N], out y: f32[N]) {
  node k = @k
  in x -> k.x
  out k.y -> y
}

root @g
"""


def _reporting_aoc(folder: Path) -> None:
    """An ``aoc -rtl`` that reports the loop on the generated ``for`` line
    at II 5 and the system's area, as report_data.js does."""
    script = folder / "aoc"
    script.write_text("""#!/bin/sh
line=$(grep -n "for (long i " kernels.cl | cut -d: -f1)
mkdir -p kernels/reports/lib
cat > kernels/reports/lib/report_data.js <<JS
var loopsJSON={"columns":["Pipelined", "II", "Bottleneck"], "functions":[{"name":"Block1", "data":["Yes", "5", "n/a"], "debug":[[{"filename":"kernels.cl", "line":$line, "level":0}]], "children":[]}]};var areaJSON='{"columns":["", "ALUTs", "FFs", "RAMs", "DSPs"], "total":[200000, 300000, 400, 12], "max_resources":[854400, 1708800, 2713, 1518]}';
JS
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_estimates_read_ii_and_area_from_the_aoc_report(tmp_path, monkeypatch):
    from hpvm.ir.text import parse_module
    module = parse_module(SCALE)
    ref, sizes = NodeRef("g", "k"), {NodeRef("g", "k"): {"N": 4096}}
    modelled = target().estimate(module, [ref], {}, sizes=sizes)
    _reporting_aoc(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    reported = target().estimate(module, [ref], {}, sizes=sizes)
    [loop] = reported["loops"]["@g.k"]
    assert modelled["loops"]["@g.k"][0]["ii"] == 1
    assert loop["ii"] == 5 and loop["limiter"] == "aoc report"
    assert reported["source"] == "aoc report" and reported["alms"] == 100000
    assert reported["m20k"] == 400 and reported["dsps"] == 12
    assert reported["cycles"] > 4 * modelled["cycles"]
    off = target().estimate(module, [ref], {"aoc_estimates": False}, sizes=sizes)
    assert off["source"] == "model"


FOUR_INDEPENDENT = """hpvm 1.0
module m

func @k(in x: f32[N], out y: f32[N]) {
  for i in 0 .. N step 1 {
    y[i] = x[i] * f32(2)
  }
}

graph @g(in a: f32[N], out b: f32[N], out c: f32[N], out d: f32[N], out e: f32[N]) {
  node p = @k
  node q = @k
  node r = @k
  node s = @k
  in a -> p.x
  in a -> q.x
  in a -> r.x
  in a -> s.x
  out p.y -> b
  out q.y -> c
  out r.y -> d
  out s.y -> e
}

root @g
"""


@pytest.mark.skipif("opencl" not in EMULATORS, reason="no OpenCL device works here")
@pytest.mark.parametrize("parallel", [True, False])
def test_task_parallelism_gives_independent_kernels_their_own_queues(parallel):
    from hpvm.ir.text import parse_module
    module = parse_module(FOUR_INDEPENDENT)
    inputs = {"a": np.arange(4096, dtype=np.float32)}
    options = {"emulator": "opencl", "task_parallelism": parallel}
    exe = check_against_interpreter(module, inputs, ["fpga_aoc"], options=options)
    for _ in range(5):
        exe(**inputs)
    queues = exe._get_devices()["fpga_aoc"].queues
    assert (len(queues) >= 1) if parallel else queues == []
    # independent kernels side by side need the dynamic scheduler
    assert (exe._static_program() is None) == parallel


def test_a_bad_unroll_option_names_the_node_and_the_fix():
    module, _ = stencil()
    with pytest.raises(HpvmError, match="stencil2d.*'four'.*positive int"):
        hpvm.compile(module, targets=["fpga_aoc"],
                     options={"unroll_instances": {"stencil2d": "four"}, "emulator": "host"})


@pytest.mark.parametrize("emulator", EMULATORS)
def test_input_buffering_copies_the_taps_on_chip(emulator):
    module, inputs = stencil()
    options = {"emulator": emulator, "input_buffering": {"stencil2d": True}}
    ref = NodeRef("ms_stencil2d", "stencil2d")
    source = target().compile(module, [ref], options).files["kernels.cl"].decode()
    assert "int filter_buffered[9] = {0};" in source and "filter_buffered[((long)" in source
    check_against_interpreter(module, inputs, ["fpga_aoc"], options={"fpga_aoc": options})


def test_copies_of_one_kernel_share_their_knobs():
    from benchmarks.programs.stencil import make_inputs, stencil as program
    from hpvm.runtime.sizes import node_sizes
    from hpvm_fpga_aoc.prepare import copy_groups
    module = program.build()
    nodes = [NodeRef(module.root_graph.name, n.name) for n in module.root_graph.nodes]
    groups = copy_groups(module, nodes)
    assert groups[NodeRef("stencil", "sweep_back_3")] == NodeRef("stencil", "sweep_back")
    knobs = target().knobs(module, nodes)
    assert len(knobs) < len(nodes) / 2
    sizes = node_sizes(module, make_inputs("small", np.random.default_rng(0)))
    plain = target().estimate(module, nodes, {}, sizes=sizes)
    lead_only = target().estimate(module, nodes, {"unroll_instances": {"sweep_back": 8}},
                                  sizes=sizes)
    faster = [key for key, cycles in lead_only["node_cycles"].items()
              if cycles < plain["node_cycles"][key]]
    assert sorted(faster) == sorted(f"@stencil.{ref.node}" for ref, lead in groups.items()
                                    if lead.node == "sweep_back")
