"""roofline_bench: each program's rows (hpvm per pipeline, the hand
kernels) against the measured peaks, and the bound each row is held to."""
import pytest

from benchmarks.roofline_bench import WORK, format_rows, main


def test_a_row_is_held_to_the_lower_of_the_two_peaks():
    # 1e9 operations over 1e9 bytes in 10 ms: 100 GFLOP/s and GB/s
    rows = [("p", "impl", 10.0, 1e9, 1e9, 9.0), ("q", "impl", 10.0, 1e12, 1e9, None)]
    lines = format_rows(rows, bandwidth=200e9, fp32=1e12)
    assert lines[2].split("|")[8:10] == [" memory ", " 0.50 "]  # 1 FLOP/byte: 200 GFLOP/s bound
    assert lines[3].split("|")[8:10] == [" FP32 ", " 100.00 "]
    assert lines[2].split("|")[4] == " 9.000 " and lines[3].split("|")[4] == "  "
    assert lines[2].split("|")[10] == " 0.56 " and lines[3].split("|")[10] == "  "  # on 9 ms
    assert format_rows(rows[:1], bandwidth=200e9, fp32=None)[2].split("|")[8] == " memory "


def test_every_work_model_counts_operations_and_bytes():
    import importlib

    import numpy as np
    for name, work in WORK.items():
        bench = importlib.import_module(f"benchmarks.programs.{name}").BENCHMARKS[0]
        flops, nbytes = work(bench.make_inputs("small", np.random.default_rng(0)))
        assert flops > 0 and nbytes > 0, name


def test_small_programs_run_on_an_opencl_device(capsys):
    pytest.importorskip("hpvm_gpu_opencl")
    from benchmarks.peers import _opencl_unavailable
    if _opencl_unavailable():
        pytest.skip(_opencl_unavailable())
    assert main(["--programs", "spmv", "--size", "small", "--repeat", "1",
                 "--pipelines", ",default", "--bound"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| spmv")]
    assert [row.split("|")[2].strip() for row in rows] == [
        "hpvm, as written", "hpvm, pipeline 'default'", "hpvm, as written, bound",
        "hpvm, pipeline 'default', bound", "opencl (hand, csr-vector)"]
    assert all(float(row.split("|")[4]) > 0 for row in rows)  # the kernels' own time, each


def test_an_f64_program_is_held_to_the_fp64_peak():
    rows = [("ms_gemm", "impl", 10.0, 1e12, 1e9, None)]
    lines = format_rows(rows, bandwidth=200e12, fp32=1e15, fp64=1e14)
    assert lines[2].split("|")[8:10] == [" FP64 ", " 1.00 "]


def test_small_programs_run_on_the_cpu(capsys):
    assert main(["--target", "cpu", "--programs", "ms_gemm", "--size", "small", "--repeat",
                 "1", "--threads", "2", "--pipelines", ",default"]) == 0
    out = capsys.readouterr().out
    assert "numpy's BLAS FP32" in out
    rows = [line for line in out.splitlines() if line.startswith("| ms_gemm")]
    assert [row.split("|")[2].strip() for row in rows][:2] == [
        "hpvm, as written", "hpvm, pipeline 'default'"]


def test_a_tuned_row_follows_the_pipelines(capsys):
    assert main(["--target", "cpu", "--programs", "ms_gemm", "--size", "small", "--repeat",
                 "1", "--threads", "2", "--pipelines", "", "--tune", "2"]) == 0
    captured = capsys.readouterr()
    rows = [line for line in captured.out.splitlines() if line.startswith("| ms_gemm")]
    assert [row.split("|")[2].strip() for row in rows][:2] == [
        "hpvm, as written", "hpvm, tuned (2 samples)"]
    assert "ms_gemm: best seconds" in captured.err
