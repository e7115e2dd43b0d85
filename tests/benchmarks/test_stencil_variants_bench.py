"""stencil_variants_bench: hand-written marches of the stencil's sweep,
each checked against the sweep in numpy, against the copy kernel."""
import numpy as np
import pytest

from benchmarks.stencil_variants_bench import main, sweep


def test_the_reference_sweep_keeps_the_boundary_and_weighs_the_neighbours():
    grid = np.random.default_rng(1).random((4, 5, 6), dtype=np.float32)
    out = sweep(grid, 1 / 6, 1 / 36)
    inner = out[1:-1, 1:-1, 1:-1]
    np.testing.assert_array_equal(out[0], grid[0])
    np.testing.assert_array_equal(out[:, :, -1], grid[:, :, -1])
    z, y, x = 1, 2, 3
    neighbours = (grid[z + 1, y, x] + grid[z - 1, y, x] + grid[z, y + 1, x] + grid[z, y - 1, x]
                  + grid[z, y, x + 1] + grid[z, y, x - 1])
    want = neighbours / 36 - grid[z, y, x] / 6
    assert inner[z - 1, y - 1, x - 1] == pytest.approx(want, rel=1e-6)


def test_every_variant_computes_the_sweep_on_an_opencl_device(capsys):
    pytest.importorskip("hpvm_gpu_opencl")
    from benchmarks.peers import _opencl_unavailable
    if _opencl_unavailable():
        pytest.skip(_opencl_unavailable())
    # a grid no variant divides evenly in z, vectors at both x edges
    assert main(["--grid", "7,12,16", "--planes", "4", "--rows", "1,2", "--repeat", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| W ")]
    assert len(rows) == 3 * 2 * 2 and not any("WRONG" in row for row in rows)


def test_a_grid_the_variants_cannot_divide_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--grid", "8,25,32", "--rows", "2"])
    assert "--rows: each dividing NY" in capsys.readouterr().err
