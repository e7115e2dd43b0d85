"""How a work item's instances lie (steps.LAYOUTS), read from the
generated source (no device needed): adjacent instances unrolled without
checks where none decides a branch; where the innermost instance id
reaches an ``if`` or a loop's bounds, a march along the outermost
dimension if the kernel reads columns there, else a launch's width apart; the option
overrides, an unknown layout is an error naming the choices; and the
work group a GPU launch gets by default.  That
both layouts and those groups compute what the interpreter does is
test_per_item.py's (device)."""
import pytest

from hpvm.errors import HpvmError
from hpvm.ir.text import parse_module
from hpvm_opencl.renderer import OpenCLRenderer

KERNELS = """hpvm 1.0
module layouts

func @scale(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  let left: i64 = max(c - 1, 0)
  y[r, c] = x[r, left] + x[r, c] * f32(2.0)
}

func @interior(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c]
  if c > 0 {
    y[r, c] = x[r, c - 1]
  }
}

func @row_branch(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c]
  if r > 0 {
    y[r, c] = x[r, c] * f32(2.0)
  }
}

func @planes(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c]
  if r > 0 && r < H - 1 {
    y[r, c] = x[r + 1, c] + x[r - 1, c] + x[r, c + 1]
  }
}

func @boxed(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c]
  if r > 0 && r < H - 1 && c > 0 && c < W - 1 {
    y[r, c] = x[r + 1, c] + x[r - 1, c] + x[r, c + 1] + x[r, c - 1]
  }
}

func @ragged(in x: f32[H, W], in n: i64[W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  let s: f32 = f32(0.0)
  for k in 0 .. n[c] step 1 {
    s = s + x[k, c]
  }
  y[r, c] = s
}

graph @main(in x: f32[H, W], in n: i64[W], out a: f32[H, W], out b: f32[H, W],
            out d: f32[H, W], out e: f32[H, W], out f: f32[H, W], out g: f32[H, W]) {
  node boxed = @boxed [H, W]
  in x -> boxed.x
  out boxed.y -> g
  node planes = @planes [H, W]
  in x -> planes.x
  out planes.y -> f
  node scale = @scale [H, W]
  node interior = @interior [H, W]
  node row_branch = @row_branch [H, W]
  node ragged = @ragged [H, W]
  in x -> scale.x
  in x -> interior.x
  in x -> row_branch.x
  in x -> ragged.x
  in n -> ragged.n
  out scale.y -> a
  out interior.y -> b
  out row_branch.y -> d
  out ragged.y -> e
}

root @main
"""


def entries(layout: str = "auto", lanes: int = 1) -> dict[str, str]:
    """Function name -> the text of its rendered entry."""
    module = parse_module(KERNELS)
    renderer = OpenCLRenderer(module, per_item=4, layout=layout, lanes=lanes)
    for name in ("scale", "interior", "row_branch", "ragged", "planes", "boxed"):
        renderer.add_entry(name, 2)
    text = renderer.finish().text
    parts = text.split("__kernel void hpvm_k_")[1:]
    return {part.split("_2d(")[0]: part for part in parts}


def layout_of(entry: str) -> str:
    found = {"contiguous": "hpvm_first * 4 + hpvm_step;" in entry,
             "strided": "hpvm_first + hpvm_step * hpvm_stride" in entry,
             "march": "const long hpvm_id0 = hpvm_first + hpvm_step;" in entry}
    assert sum(found.values()) == 1, found
    return next(name for name, present in found.items() if present)


def test_auto_takes_adjacent_instances_unless_the_innermost_id_decides_a_branch():
    """...and there marches where the kernel has columns (boxed: a
    stencil with its interior test), else strides."""
    rendered = entries()
    assert {name: layout_of(text) for name, text in rendered.items()} == {
        "scale": "contiguous", "interior": "strided", "row_branch": "contiguous",
        "ragged": "strided", "planes": "contiguous", "boxed": "march"}



MERGE_BREAKERS = """hpvm 1.3
module breakers

func @channels(in x: f32[3, H, W], out y: f32[3, H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  for ch in 0 .. 3 step 1 {
    y[ch, r, c] = x[ch, r, c] * f32(2.0)
  }
}

func @divided(in x: f32[H, W], in d: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c] / d[r, 0]
}

func @thirds(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = (x[r, c] + x[r, max(c - 1, 0)]) / f32(3.0)
}

func @root(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = sqrt(x[r, c])
}

func @in_place(inout y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = y[r, c] * f32(2.0)
}

graph @main() {
}

root @main
"""


@pytest.mark.parametrize("fast_math", [False, True])
def test_auto_strides_where_the_device_compiler_would_not_merge_the_steps(fast_math):
    """Steps' accesses inside a loop, a correctly rounded division by other
    than a constant or square root (their slow paths branch), a buffer
    updated in place (not restrict): a launch's width apart.  With fast
    math, divisions and roots have no slow path."""
    renderer = OpenCLRenderer(parse_module(MERGE_BREAKERS), per_item=4, fast_math=fast_math)
    module = renderer.module
    layouts = {name: renderer.instance_layout(module.function(name), 2)
               for name in ("channels", "divided", "thirds", "root", "in_place")}
    slow = "contiguous" if fast_math else "strided"
    assert layouts == {"channels": "strided", "divided": slow, "thirds": "contiguous",
                       "root": slow, "in_place": "strided"}


def test_a_strided_launch_that_is_not_divided_runs_one_instance_without_steps():
    renderer = OpenCLRenderer(parse_module(MERGE_BREAKERS), per_item=4)
    renderer.add_entry("channels", 2)
    entry = renderer.finish().text
    single = entry.index("if (hpvm_stride >= hpvm_count1)")
    assert single < entry.index("hpvm_first + hpvm_step * hpvm_stride")
    assert "const long hpvm_id1 = hpvm_first;" in entry[single:]


def test_adjacent_instances_run_unchecked_where_the_whole_run_is_inside():
    scale = entries()["scale"]
    fast, tail = scale.split("else {")
    assert "if (hpvm_stride < hpvm_count1 && hpvm_first * 4 + 4 <= hpvm_count1)" in fast
    assert "#pragma unroll" in fast and "break" not in fast
    assert "if (hpvm_id1 >= hpvm_count1) break;" in tail
    # an undivided launch (its width covers the row) runs one instance a work item
    assert "hpvm_run = hpvm_stride < hpvm_count1 ? 4 : 1" in tail


def test_a_march_reads_each_row_of_its_column_once_into_registers():
    planes = entries("march")["planes"]
    assert "const long hpvm_first = (long)get_global_id(1) * 4;" in planes
    assert "float hpvm_column_x[6];" in planes  # rows first - 1 .. first + 4
    assert "hpvm_column_x[hpvm_step + 2] + hpvm_column_x[hpvm_step + 0]" in planes
    assert "x[((HPVM_INDEX)r) * (HPVM_INDEX)hpvm_x_d1 + (HPVM_INDEX)(" in planes  # x[r, c + 1]
    assert "(hpvm_at >= 0 && hpvm_at < hpvm_x_d0 && hpvm_id1 < hpvm_x_d1)" in planes


def test_lanes_of_a_march_read_shared_elements_as_vectors_and_store_once_a_step():
    """Two adjacent columns a work item (lanes.py): the column's rows as
    vectors, a lane's right neighbour the next lane's element, the left
    one of lane 0 loaded as written; one vector store a step."""
    planes = entries("march", lanes=2)["planes"]
    assert "const long hpvm_lane0 = (long)get_global_id(0) * 2;" in planes
    assert "if (hpvm_lane0 >= hpvm_count1) return;" in planes
    assert "float2 hpvm_column_x[6];" in planes
    # no branch: indices clamped into the buffer (a lane uses the element
    # only where its code reads it in bounds), one access where aligned
    assert "hpvm_load_float2(x + (((HPVM_INDEX)(clamp((HPVM_INDEX)(hpvm_at), (HPVM_INDEX)0, " \
           "(HPVM_INDEX)hpvm_x_d0 - 1)))" in planes
    lane0, lane1 = planes.split("const long hpvm_id1 = hpvm_lane0 + ")[1:]
    assert "hpvm_column_x[hpvm_step + 2].s0 + hpvm_column_x[hpvm_step + 0].s0) + " \
           "hpvm_column_x[hpvm_step + 1].s1" in lane0
    assert "hpvm_column_x[hpvm_step + 2].s1 + hpvm_column_x[hpvm_step + 0].s1) + x[" in lane1
    assert "hpvm_sink_y.s0 = " in lane0 and "hpvm_sink_y.s1 = " in lane1
    assert "hpvm_store_float2(hpvm_sink_y, y + " in lane1
    boxed = entries("march", lanes=2)["boxed"]  # rows above and below: a vector a step
    assert boxed.count("const float2 hpvm_row_x_") == 0  # rank 2: shifts along rows only
    assert "hpvm_column_x[hpvm_step + 1].s1" in boxed


def test_lane_vectors_are_one_access_where_aligned():
    module = parse_module(KERNELS)
    renderer = OpenCLRenderer(module, per_item=4, layout="march", lanes=4)
    renderer.add_entry("planes", 2)
    text = renderer.finish().text
    assert "return ((ulong)p & 15) == 0 ? *(const __global float4*)p : vload4(0, p);" in text
    assert "if (((ulong)p & 15) == 0) *(__global float4*)p = v;" in text


def test_lanes_of_a_march_plan_what_they_share():
    from hpvm_opencl.lanes import lane_plan
    module = parse_module(PLANES_3D)
    plan = lane_plan(module.function("sweep"), 3, 2)
    assert plan.columns == {"a": (-1, 1)}
    assert plan.rows == {"a": ((0, -1), (0, 1))}
    assert plan.sinks == ("b",)
    # a buffer also read, or stored only under a branch, is stored lane by lane
    assert lane_plan(module.function("accumulate"), 3, 2).sinks == ()
    assert lane_plan(module.function("guarded"), 3, 2).sinks == ()


PLANES_3D = """hpvm 1.3
module planes

func @sweep(in a: f32[D, H, W], out b: f32[D, H, W]) {
  let z: i64 = instance_id(0)
  let y: i64 = instance_id(1)
  let x: i64 = instance_id(2)
  b[z, y, x] = a[z, y, x]
  if 0 < z && z < D - 1 && (0 < y && y < H - 1) && (0 < x && x < W - 1) {
    b[z, y, x] = a[z + 1, y, x] + a[z - 1, y, x] + a[z, y + 1, x] + a[z, y - 1, x] + a[z, y, x + 1]
  }
}

func @accumulate(in a: f32[D, H, W], inout b: f32[D, H, W]) {
  let z: i64 = instance_id(0)
  let y: i64 = instance_id(1)
  let x: i64 = instance_id(2)
  b[z, y, x] = b[z, y, x] + a[z + 1, y, x] + a[z, y, x]
}

func @guarded(in a: f32[D, H, W], out b: f32[D, H, W]) {
  let z: i64 = instance_id(0)
  let y: i64 = instance_id(1)
  let x: i64 = instance_id(2)
  if 0 < z {
    b[z, y, x] = a[z - 1, y, x] + a[z, y, x]
  }
}

graph @main() {
}

root @main
"""


def test_columns_are_read_only_buffers_at_two_or_more_shifts_of_the_own_element():
    from hpvm_opencl.steps import columns
    module = parse_module(KERNELS)
    assert columns(module.function("planes"), 2) == {"x": (-1, 1)}
    assert columns(module.function("planes"), 1) == {}
    assert columns(module.function("interior"), 2) == {}  # one shift only
    assert columns(module.function("row_branch"), 2) == {}
    written = parse_module(KERNELS.replace("func @planes(in x: f32[H, W], out y: f32[H, W])",
                                           "func @planes(inout x: f32[H, W], out y: f32[H, W])")
                           .replace("  y[r, c] = x[r, c]\n  if r > 0 && r < H - 1",
                                    "  x[r, c] = f32(1.0)\n  if r > 0 && r < H - 1"))
    assert columns(written.function("planes"), 2) == {}


@pytest.mark.parametrize("layout", ["contiguous", "strided", "march"])
def test_the_option_overrides_the_rule(layout):
    assert {layout_of(text) for text in entries(layout).values()} == {layout}


def test_an_unknown_layout_names_the_choices():
    with pytest.raises(HpvmError, match="unknown per_item layout 'diagonal'.*auto, contiguous, "
                                        "strided, march"):
        entries("diagonal")


def test_gpu_kernels_default_to_groups_of_256_work_items():
    from hpvm_opencl.launch import default_group
    assert default_group((8192, 2048), 1024) == (4, 64)
    assert default_group((64, 512, 128), 1024) == (1, 4, 64)
    assert default_group((1048577, 17), 1024) == (15, 17)  # whole narrow rows
    assert default_group((3, 2048), 1024) == (3, 64)
    assert default_group((1048577,), 1024) == (256,) and default_group((100,), 1024) == (100,)
    assert default_group((0, 5), 1024) is None and default_group((4096,), 128) is None
    # too small to give each of 132 compute units a group: halved, down to a warp
    assert default_group((128, 17), 1024, 132) == (1, 17)  # backprop's partial sums
    assert default_group((128, 128), 1024, 132) == (1, 64)
    assert default_group((3072,), 1024, 132) == (32,)
    assert default_group((100_000,), 1024, 132) == (256,)
