"""gpu_shapes_bench: sgemm's group tiles by size and the heat steps against
the copy kernel, on a small OpenCL run."""
import pytest

from benchmarks.gpu_shapes_bench import group_pipeline, main


def test_a_group_form_names_its_tile_and_group():
    assert group_pipeline("8x4/16") == ("register-tile{form=group rows=8 cols=4 group=16 "
                                        "kblock=16 unroll=16},dce")


def test_an_unknown_family_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--families", "tiles,stencils"])
    assert "unknown families ['stencils'] (choose among tiles, steps, orders)" in \
        capsys.readouterr().err


def test_both_families_run_on_an_opencl_device(capsys):
    pytest.importorskip("hpvm_gpu_opencl")
    from benchmarks.peers import _opencl_unavailable
    if _opencl_unavailable():
        pytest.skip(_opencl_unavailable())
    assert main(["--families", "tiles,steps", "--sizes", "40", "--tiles", "4x4/8", "--grid", "64",
                 "--repeat", "1"]) == 0
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith("| 40 ") or line.startswith("| in_place")]
    assert len(rows) == 2 and all(float(cell) > 0 for row in rows for cell in row[1:])
