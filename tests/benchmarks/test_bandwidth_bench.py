"""bandwidth_bench: a row per kernel, layout and per_item, each kernel's
rate against the copy kernel's."""
import pytest

from benchmarks.bandwidth_bench import main


def test_small_programs_run_on_an_opencl_device(capsys):
    pytest.importorskip("hpvm_gpu_opencl")
    from benchmarks.peers import _opencl_unavailable
    if _opencl_unavailable():
        pytest.skip(_opencl_unavailable())
    assert main(["--size", "small", "--repeat", "1", "--layouts", "auto,strided"]) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and "---" not in line and "kernel" not in line]
    assert sorted({(row[1].strip(), row[3].strip()) for row in rows}) == sorted(
        (kernel, layout) for kernel in ("map map", "blur blur_x", "blur blur_y",
                                        "stencil sweep_to_scratch", "stencil sweep_back")
        for layout in ("auto", "strided"))
    assert all(float(row[4]) > 0 for row in rows)  # ms (a tiny kernel's share of copy: 0.00)
