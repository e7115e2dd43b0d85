"""The design space: parameters found in the IR, in words; the defaults
are the program as written; every configuration realises to a program
that computes what the original does, on every usable target; bad
parameters and values are refused with the fix."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.testing import check_random_designs, usable_targets
from hpvm.tune import TuneError, space
from hpvm.tune.space import DEFAULT_PIPELINE

ROOT = Path(__file__).resolve().parents[2]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
CHAIN = (ROOT / "tests" / "tune" / "chain.hpvm").read_text()


def benchmarks():
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import all_benchmarks
    return all_benchmarks()


def test_parameters_are_found_in_the_ir_and_said_in_words():
    design = space(parse_module(CHAIN), ["cpu"])
    names = [p.name for p in design]
    assert names == ["fuse scale:offset", "fuse offset:clamp", "unroll offset.k", "unroll copies",
                     "cpu.lanes", "cpu.rows", "task parallelism", "default pipeline"]
    unroll = design.parameter("unroll offset.k")
    assert unroll.values == (0, 1, 2, 3) and unroll.label(3) == "full (3)"
    assert unroll.label(0) == "as written"
    assert "fuse node 'scale' into its consumer 'offset'" in design.describe()
    assert design.size == 2 * 2 * 4 * 2 * 4 * 3 * 2 * 2


def test_unroll_factors_go_to_the_back_end_when_copies_are_not_chosen():
    design = space(parse_module(CHAIN), ["cpu"])
    copies = design.realise({"unroll offset.k": 2})
    assert copies.pipeline == "loop-unroll,dce"
    assert "[unroll = 2]" not in print_module(copies.module)
    hinted = design.realise({"unroll offset.k": 2, "unroll copies": False})
    assert hinted.pipeline == "" and "for k in 0 .. 3 step 1 [unroll = 2]" in \
        print_module(hinted.module)
    inputs = {"a": np.linspace(-3, 3, 40, dtype=np.float32),
              "bias": np.array([0.5, -1, 0.25], np.float32)}
    expected = Interpreter(design.module).run(**inputs)
    for realised in (copies, hinted):
        exe = hpvm.compile(realised.module, ["cpu"], options=realised.options)
        np.testing.assert_allclose(exe(**inputs)["c"], expected["c"], rtol=1e-6)


def test_the_defaults_are_the_program_as_written():
    module = parse_module(CHAIN)
    realised = space(module, ["cpu"]).realise({})
    assert print_module(realised.module) == print_module(module)
    assert realised.pipeline == "" and realised.options == {"task_parallelism": True,
                                                            "cpu": {"lanes": 16, "rows": 1}}


def test_a_configuration_becomes_passes_hints_and_options():
    design = space(parse_module(CHAIN), ["cpu"])
    realised = design.realise({"fuse scale:offset": True, "fuse offset:clamp": True,
                               "unroll offset.k": 3, "cpu.lanes": 4, "task parallelism": False})
    assert realised.pipeline == "node-fusion{pairs=scale:offset,offset:clamp},loop-unroll,dce"
    text = print_module(realised.module)
    assert text.count("node ") == 1 and "for k" not in text  # fused, and unrolled fully
    assert realised.options == {"task_parallelism": False, "cpu": {"lanes": 4, "rows": 1}}


def test_a_product_register_tile_takes_keeps_its_loop_whole_for_the_default_pipeline():
    """An unroll factor in copies would leave a later register-tile (the
    cpu's own passes; a GPU's default pipeline) a main loop and a
    remainder, no product to tile: a product's loop keeps its factor out
    (a note says so); a loop no later pass tiles is copied."""
    module = parse_module((ROOT / "examples" / "ir" / "matmul.hpvm").read_text())
    design = space(module, ["cpu"])
    assert "register-tile" in design.target_passes
    for values in ({"unroll matmul.k": 4}, {"unroll matmul.k": 4, DEFAULT_PIPELINE: True}):
        kept = design.realise(values)
        text = print_module(kept.module)
        assert text.count("for k") == 1 and "[unroll" not in text
        assert any("left to register-tile" in note for note in kept.notes)
    design.target_passes = ""
    copied = design.realise({"unroll matmul.k": 4})
    assert print_module(copied.module).count("for k") == 2 and not copied.notes


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_tiles_are_offered_only_where_a_listed_target_runs_work_groups():
    module = parse_module((ROOT / "examples" / "ir" / "matmul.hpvm").read_text())
    assert not [p for p in space(module, ["cpu"]) if p.role == "tile"]
    design = space(module, ["gpu_opencl", "cpu"])
    tile = design.parameter("tile main.mm")
    assert tile.values == ("as written", "matmul 16", "matmul 32", "group 8x4", "group 8x8",
                           "group 4x8", "group 4x4", "group 4x2", "group 2x2", "group 4x4/8x8")
    realised = design.realise({"tile main.mm": "matmul 16"})
    assert realised.pipeline == "tile{form=matmul nodes=mm},dce"   # size 16: the default
    assert "a_tile[lane_row, k_step]" in print_module(realised.module)
    realised = design.realise({"tile main.mm": "group 8x4"})
    assert realised.pipeline == ("register-tile{form=group rows=8 cols=4 unroll=16 nodes=mm},"
                                 "dce")
    assert "padded_groups = true" in print_module(realised.module)
    realised = design.realise({"tile main.mm": "group 4x4/8x8"})
    assert realised.pipeline == ("register-tile{form=group rows=4 cols=4 unroll=16 group=8 "
                                 "nodes=mm},dce")


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_knobs_of_copies_alone_are_left_out_where_the_objective_cannot_see_copies():
    module = parse_module((ROOT / "examples" / "ir" / "matmul.hpvm").read_text())
    names = {p.name for p in space(module, ["gpu_opencl"])}
    assert "gpu_opencl.transfer" in names and "gpu_opencl.work_group @main.mm" in names
    names = {p.name for p in space(module, ["gpu_opencl"], copies_seen=False)}
    assert "gpu_opencl.transfer" not in names and "gpu_opencl.work_group @main.mm" in names


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_a_form_chosen_for_a_node_follows_it_into_a_fusion_or_is_dropped_with_a_note():
    edge = next(b for b in benchmarks() if b.name == "edge").build()
    design = space(edge, ["gpu_opencl", "cpu"])
    # The producer's form goes to the fused node (it keeps the producer's place).
    realised = design.realise({"fuse sobel_x:magnitude": True,
                               "tile edge_detect.sobel_x": "stencil 16"})
    assert realised.pipeline == ("node-fusion{pairs=sobel_x:magnitude},"
                                 "tile{form=stencil nodes=sobel_x_magnitude},dce")
    # The consumer is gone: its form is not applied, and the note says why.
    realised = design.realise({"fuse sobel_x:magnitude": True,
                               "tile edge_detect.magnitude": "stencil 16"})
    assert realised.pipeline == "node-fusion{pairs=sobel_x:magnitude},dce"
    assert realised.notes == ["tile of node 'magnitude' not applied: a fusion merged the "
                              "node into another"]


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_a_form_a_fusion_no_longer_allows_is_dropped_with_a_note():
    """ambisonic's harmonics recomputed in encode leave encode's loop with
    nothing reused across instances: its register tiles no longer apply."""
    ambisonic = next(b for b in benchmarks() if b.name == "ambisonic").build()
    design = space(ambisonic, ["gpu_opencl"])
    realised = design.realise({"recompute harmonics:encode": True,
                               "tile ambisonic.encode": "group 8x4"})
    assert realised.pipeline == "stencil-fusion{pairs=harmonics:encode},dce"
    assert realised.notes == ["tile of node 'encode' not applied: the fusions chosen with it "
                              "changed the node, and the form no longer applies"]


def test_placement_is_a_parameter_per_node_when_several_targets_claim_it():
    module = parse_module(CHAIN)
    design = space(module, ["cpu", "interp"])
    place = design.parameter("place @main.scale")
    assert place.values == ("cpu", "interp") and place.default == "cpu"
    # Fusing nodes placed apart is not done, and the note says why.
    realised = design.realise({"place @main.scale": "interp", "fuse scale:offset": True})
    assert realised.notes == ["fuse scale:offset: not fused, its nodes run on interp and cpu"]
    exe = hpvm.compile(realised.module, ["cpu", "interp"], options=realised.options)
    assert exe.placement.targets["@main.scale"] == "interp"
    assert exe.placement.targets["@main.offset"] == "cpu"


def test_hints_stay_hard_constraints():
    hinted = CHAIN.replace("node scale = @scale [N]", "node scale = @scale [N] hint cpu")
    design = space(parse_module(hinted), ["cpu", "interp"])
    assert "place @main.scale" not in [p.name for p in design]
    assert "place @main.offset" in [p.name for p in design]


def test_only_the_passes_asked_for_give_parameters():
    design = space(parse_module(CHAIN), ["cpu"], passes=())
    assert [p.name for p in design] == ["cpu.lanes", "cpu.rows", "task parallelism"]
    with pytest.raises(TuneError, match="no tuning parameters for pass.*inline"):
        space(parse_module(CHAIN), ["cpu"], passes=("inline",))


@pytest.mark.parametrize("values, message", [
    ({"fuse a:b": True}, "no parameter 'fuse a:b'.*fuse scale:offset"),
    ({"cpu.lanes": 3}, "'cpu.lanes' cannot be 3.*1, 4, 8, 16"),
    ({"unroll offset.k": "full"}, "cannot be 'full'"),
])
def test_unknown_parameters_and_values_are_refused_with_the_fix(values, message):
    with pytest.raises(TuneError, match=message):
        space(parse_module(CHAIN), ["cpu"]).realise(values)


def test_enumeration_visits_every_configuration_once_defaults_first():
    design = space(parse_module(CHAIN), ["cpu"], passes=("node-fusion",))
    seen = [tuple(sorted(v.items())) for v in design.enumerate()]
    assert len(seen) == len(set(seen)) == design.size
    assert dict(seen[0]) == design.defaults()


def check_random_configurations(module, inputs, expected, rtol, atol, seed, count=3):
    check_random_designs(module, inputs, expected, usable_targets(("cpu", "interp")), rtol, atol,
                         seed, count)


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_random_configurations_keep_corpus_programs_correct(program):
    module = program.build()
    inputs = program.make_inputs(np.random.default_rng(5))
    check_random_configurations(module, inputs, Interpreter(module).run(**inputs),
                                max(program.rtol, 1e-4), max(program.atol, 1e-5), program.name)


@pytest.mark.parametrize("bench", benchmarks(), ids=lambda b: b.name)
def test_random_configurations_keep_benchmark_programs_correct(bench):
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    check_random_configurations(bench.build(), inputs, bench.reference(inputs), bench.rtol,
                                bench.atol, bench.name, count=2)


def test_a_space_is_made_from_what_compile_takes(tmp_path):
    program = load_python_file(ROOT / "examples" / "matmul.py").matmul
    module = program.build()
    path = tmp_path / "matmul.hpvm"
    path.write_text(print_module(module))
    expected = [p.name for p in space(module, ["cpu"])]
    assert [p.name for p in space(program, ["cpu"])] == expected
    assert [p.name for p in space(str(path), ["cpu"])] == expected


def test_a_space_prints_its_program_targets_and_size():
    design = space(parse_module(CHAIN), ["cpu"])
    assert repr(design) == (f"<Space of '{design.module.name}' on cpu: {len(design)} parameters, "
                            f"{design.size} configurations>")


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_a_stencil_pair_may_be_computed_in_local_tiles_where_a_target_takes_them():
    from tests.passes.test_stencil_tiles import IMAGE, image_inputs
    module = parse_module(IMAGE)
    recompute = space(module, ["gpu_opencl"]).parameter("recompute split:smooth")
    assert recompute.values == (False, True, "tile 16 rows 2", "tile 16 rows 4", "tile 32 rows 2")
    assert space(module, ["cpu"]).parameter("recompute split:smooth").values == (False, True)
    realised = space(module, ["gpu_opencl"]).realise({"recompute split:smooth": "tile 32 rows 2"})
    assert realised.pipeline == "stencil-fusion{pairs=split:smooth form=tile size=32 rows=2},dce"
    inputs = image_inputs()
    expected = Interpreter(module).run(**inputs)
    got = hpvm.compile(realised.module, ["gpu_opencl"], realised.options)(**inputs)
    np.testing.assert_array_equal(got["b"], expected["b"])


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_a_stencil_computed_in_tiles_takes_its_consumers_in_first():
    """camera's denoise fused with colour and gamut, then demosaic computed
    in the fused node's tiles: node-fusion runs first, on the stencil."""
    camera = next(b for b in benchmarks() if b.name == "camera")
    design = space(camera.build(), ["gpu_opencl"])
    realised = design.realise({"recompute demosaic:denoise": "tile 16 rows 2",
                               "fuse denoise:colour": True, "fuse colour:gamut": True})
    assert realised.pipeline == (
        "node-fusion{pairs=denoise:colour,colour:gamut},"
        "stencil-fusion{pairs=demosaic:denoise_colour_gamut form=tile rows=2},dce")
    assert realised.notes == []
    inputs = camera.make_inputs("small", np.random.default_rng(0))
    got = hpvm.compile(realised.module, ["gpu_opencl"], realised.options)(**inputs)
    np.testing.assert_allclose(got["out"], camera.reference(inputs)["out"],
                               rtol=camera.rtol, atol=camera.atol)
