"""Perforation of a kernel node's instances (the approximate pass's
perf-rows / perf-cols on kernel nodes): kept rows are computed exactly,
skipped ones are the mean of their neighbours, on every usable scalar
target; nodes whose instances cannot be skipped are refused with the
reason."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.lang import Buffer, f32, i64, parallel_loop
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import verify
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.approximate import apply_knobs
from hpvm.runtime.compiler import as_module
from hpvm.testing import assert_outputs_close, usable_targets


@hl.program
def shade(img: Buffer[f32, "H", "W"], out: Buffer[f32, 3, "H", "W"]):
    for y, x in parallel_loop(H, W, ins=(img,), outs=(out,), name="shade"):
        for c in range(3):
            out[c, y, x] = img[y, x] * f32(c + 1) + f32(y) * 0.5 - f32(x)


@hl.program
def shift(img: Buffer[f32, "H", "W"], out: Buffer[f32, "H", "W"]):
    for y, x in parallel_loop(H, W, ins=(img,), outs=(out,), name="shift"):
        out[y, min(x + 1, W - 1)] = img[y, x]


@hl.program
def row_sums(img: Buffer[f32, "H", "W"], out: Buffer[f32, "H"]):
    for y in parallel_loop(H, ins=(img,), outs=(out,), name="sums"):
        out[y] = sum(img[y, x] for x in range(W))


def interpolated(exact: np.ndarray, axis: int, every: int, offset: int) -> np.ndarray:
    """``exact`` with the skipped positions of ``axis`` replaced by the mean
    of their neighbours (the one neighbour at either end)."""
    moved = np.moveaxis(exact.copy(), axis, 0)
    size = moved.shape[0]
    if size >= 2:
        for row in range(offset, size, every):
            if row == 0:
                moved[row] = moved[1]
            elif row == size - 1:
                moved[row] = moved[row - 1]
            else:
                moved[row] = (moved[row - 1] + moved[row + 1]) / np.float32(2)
    return np.moveaxis(moved, 0, axis)


@pytest.mark.parametrize("knob, axis, every, offset", [
    ("perf-rows-2-0", 1, 2, 0), ("perf-rows-2-1", 1, 2, 1), ("perf-rows-3-2", 1, 3, 2),
    ("perf-cols-4-1", 2, 4, 1), ("perf-cols-3-0", 2, 3, 0)])
@pytest.mark.parametrize("height, width", [(7, 10), (8, 5)])
def test_kept_rows_are_exact_and_skipped_rows_interpolated(knob, axis, every, offset,
                                                         height, width):
    module = apply_knobs(as_module(shade), {"shade": knob})
    verify(module)
    img = np.random.default_rng(height).random((height, width), dtype=np.float32)
    exact = hpvm.compile(shade, ["interp"])(img=img)["out"]
    expected = {"out": interpolated(exact, axis, every, offset)}
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(img=img), expected, 1e-6, 1e-6,
                             target)


def test_a_single_row_is_never_skipped():
    module = apply_knobs(as_module(shade), {"shade": "perf-rows-2-0"})
    img = np.ones((1, 6), np.float32)
    expected = hpvm.compile(shade, ["interp"])(img=img)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(img=img), expected, 0, 0, target)


def test_the_fill_node_takes_over_the_output_and_the_module_round_trips():
    module = run_pipeline(as_module(shade), "approximate{knobs=shade:perf-rows-3-1}")
    graph = module.root_graph
    assert [n.name for n in graph.nodes] == ["shade", "shade_fill_rows"]
    assert [(b.src_node, b.src_port) for b in graph.bind_outs] == [("shade_fill_rows", "x")]
    assert graph.node("shade").body.function == "shade_perf_rows"
    text = print_module(module)
    assert print_module(parse_module(text)) == text


def test_a_one_dimensional_node_perforates_its_rows():
    module = apply_knobs(as_module(row_sums), {"sums": "perf-rows-2-1"})
    img = np.random.default_rng(1).random((9, 4), dtype=np.float32)
    exact = img.sum(axis=1)
    expected = {"out": interpolated(exact, 0, 2, 1)}
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(img=img), expected, 1e-5, 1e-6,
                             target)


@pytest.mark.parametrize("program, node, knob, words", [
    (shift, "shift", "perf-cols-2-0", "not always indexed by the instance id of dimension 1"),
    (row_sums, "sums", "perf-cols-2-0", "1 replication dimension"),
    (shade, "shade", "fp16", "does not apply to a kernel node"),
    (shade, "shade", "samp-2-0", "does not apply to a kernel node"),
])
def test_nodes_whose_instances_cannot_be_skipped_are_refused(program, node, knob, words):
    with pytest.raises(PassError, match=words) as raised:
        apply_knobs(as_module(program), {node: knob})
    assert f"'{node}'" in str(raised.value) or node in str(raised.value.diagnostics[0].location)
