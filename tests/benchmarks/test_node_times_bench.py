"""node_times_bench: each kernel's own time under several option sets, a
row per kernel and a total, each set against the first."""
import pytest

from benchmarks.node_times_bench import kernel_of, main, table


def test_a_repeated_nodes_time_goes_to_its_kernels_row():
    assert kernel_of("sweep_back_3") == kernel_of("sweep_back") == "sweep_back"
    assert kernel_of("blur_x") == "blur_x"


def test_rows_give_each_option_sets_time_and_its_ratio_to_the_first():
    lines = table("p", [{"a": (2e-3, 1), "b": (1e-3, 2)}, {"a": (1e-3, 1), "b": (3e-3, 2)}])
    assert lines == ["| p | a | 2.0000 | 1.0000 | 0.50 |", "| p | b | 1.0000 | 3.0000 | 3.00 |",
                     "| p | total | 3.0000 | 4.0000 | 1.33 |"]


def test_options_must_be_a_list_of_objects(capsys):
    with pytest.raises(SystemExit):
        main(["--programs", "camera", "--options", '{"per_item": 1}'])
    assert "a JSON list of objects" in capsys.readouterr().err


def test_a_small_program_runs_on_an_opencl_device(capsys):
    pytest.importorskip("hpvm_gpu_opencl")
    from benchmarks.peers import _opencl_unavailable
    if _opencl_unavailable():
        pytest.skip(_opencl_unavailable())
    assert main(["--programs", "camera", "--size", "small", "--repeat", "1",
                 "--options", '[{}, {"per_item": 1}]']) == 0
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| camera")]
    assert [row[2].strip() for row in rows] == ["demosaic", "denoise", "colour", "gamut", "tone",
                                                "total"]
    assert all(float(row[3]) > 0 and float(row[4]) > 0 and float(row[5]) > 0 for row in rows)
