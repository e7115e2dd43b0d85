"""stencil-fusion{form=tile}: the producer computed once per work group into
a local tile, the stencil reading it there; reads known to lie inside the
tile read it without a test, the others recompute their element where
they fall outside; results equal the two nodes' on every target with work
groups, on sizes that are not multiples of the group; the default fuses
only neighbourhoods; refusals name the reason."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.stencil_fusion import fusible_stencils
from hpvm.passes.stencil_tiles import Tiles
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
TARGETS = usable_targets(("interp", "gpu_opencl"))

IMAGE = """hpvm 1.0
module image

func @split(in a: f32[H, W], out s: f32[2, H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  let v: f32 = a[y, x] + a[y, min(x + 1, W - 1)]
  if (y + x) % 2 == 0 {
    s[0, y, x] = v
    s[1, y, x] = v * f32(2.0)
  } else {
    s[1, y, x] = f32(0.0) - v
    s[0, y, x] = v * f32(3.0)
  }
}

func @smooth(in s: f32[2, H, W], out b: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  let total: f32 = s[1, y, x]
  for c in 0 .. 2 step 1 {
    for dy in -1 .. 2 step 1 {
      total = total + s[c, min(max(y + dy, 0), H - 1), min(max(x - 1, 0), W - 1)]
    }
  }
  b[y, x] = total
}

graph @main(in a: f32[H, W], out b: f32[H, W]) {
  node split = @split [H, W]
  node smooth = @smooth [H, W]
  edge split.s -> smooth.s all-to-all
  in a -> split.a
  out smooth.b -> b
}

root @main
"""
FAR = IMAGE.replace("  b[y, x] = total", "  b[y, x] = total + s[0, H - 1 - y, x]")


def image_inputs(height=19, width=23):
    rng = np.random.default_rng(0)
    return {"a": rng.standard_normal((height, width)).astype(np.float32)}


def tiled(text: str, options: str = "") -> str:
    pipeline = f"stencil-fusion{{form=tile{options}}},dce"
    return print_module(run_pipeline(parse_module(text), pipeline, verify_each=True))


def check(original: str, fused: str, inputs: dict) -> None:
    expected = Interpreter(parse_module(original)).run(**inputs)
    for target in TARGETS:
        assert_outputs_close(hpvm.compile(parse_module(fused), [target])(**inputs), expected,
                             0, 0, f"the tiled fusion on {target}")


def test_the_group_computes_its_region_once_and_reads_it_from_the_tile():
    text = tiled(IMAGE)
    assert "node smooth = @split_smooth [H, W] {group = [16, 16], padded_groups = true}" in text
    assert "local s_tile: f32[2, 18, 18] = undef" in text   # the reads reach 1 both ways
    assert text.count("barrier") == 1
    assert "s[" not in text and "a[" in text                 # no read needs the fallback
    check(IMAGE, text, image_inputs())


@pytest.mark.parametrize("options", [" size=4", " size=4 halo=3", " size=2 halo=1",
                                     " size=8 halo=2", " size=4 rows=3", " size=8 rows=2 halo=2"])
def test_results_are_the_two_nodes_on_sizes_that_are_not_multiples(options):
    """Small groups fill their tile in several rounds, the last partly;
    work items computing several rows skip those past the image."""
    check(IMAGE, tiled(IMAGE, options), image_inputs())


def test_work_items_compute_several_rows_of_a_taller_block():
    text = tiled(IMAGE, " rows=4")
    assert "node smooth = @split_smooth [(H + 3) / 4, W] {group = [16, 16]" in text
    assert "local s_tile: f32[2, 66, 18] = undef" in text
    assert text.count("let instance_row") == 4 and "(instance_id(0) - lane_row) * 4" in text


def test_reads_past_the_tile_recompute_their_element():
    text = tiled(FAR, " pairs=split:smooth")
    assert "select(" in text     # the far read's channels, recomputed
    check(FAR, text, image_inputs())
    check(FAR, tiled(FAR, " pairs=split:smooth size=4"), image_inputs(8, 5))
    check(FAR, tiled(FAR, " pairs=split:smooth size=4 rows=2"), image_inputs(11, 5))


def test_the_default_fuses_only_neighbourhoods():
    assert tiled(IMAGE).count("node ") == 1
    assert tiled(FAR).count("node ") == 2       # one read's reach is not known
    assert fusible_stencils(parse_module(FAR), Tiles(16, 0)) == ["split:smooth"]


@pytest.mark.parametrize("change, options, message", [
    (("node smooth = @smooth [H, W]", "node smooth = @smooth [H, W] {group = [8, 8]}"), "",
     "'smooth' has a work-group size already"),
    (("f32", "f64"), " size=32 halo=8", "2 tile\\(s\\) of 48x48 take 36864 bytes, over 32768"),
    (("  let total: f32 = s[1, y, x]", "  local t: f32[4]\n  let total: f32 = s[1, y, x]"),
     "", "'smooth' already synchronises its work group"),
])
def test_pairs_that_cannot_be_tiled_are_refused_with_the_reason(change, options, message):
    text = IMAGE.replace(*change)
    with pytest.raises(PassError, match=message):
        run_pipeline(parse_module(text), f"stencil-fusion{{form=tile pairs=split:smooth{options}}}")


def test_one_dimensional_pairs_are_refused():
    from tests.passes.test_stencil_fusion import SMOOTH
    with pytest.raises(PassError, match="must each have two replication dimensions"):
        run_pipeline(parse_module(SMOOTH), "stencil-fusion{form=tile pairs=scale:window}")


@pytest.mark.parametrize("name", ["blur", "camera"])
def test_benchmark_pipelines_keep_their_results(name):
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import get
    bench = get(name)
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    module = run_pipeline(bench.build(), "inline,node-fusion,stencil-fusion{form=tile},dce",
                          verify_each=True)
    assert sum(len(g.nodes) for g in module.graphs.values()) < \
        sum(len(g.nodes) for g in run_pipeline(bench.build(), "node-fusion").graphs.values())
    for target in TARGETS:
        assert_outputs_close(hpvm.compile(module, [target])(**inputs), bench.reference(inputs),
                             bench.rtol, bench.atol, f"{name} tiled, on {target}")
