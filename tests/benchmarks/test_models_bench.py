"""models_bench's record and comparison: rows become ratios to
onnxruntime in the same run, ``--json`` files are what ``--compare``
reads back, and a file that is not a record is refused before any model
is built."""
import json
from dataclasses import asdict

from benchmarks.compare import comparison_table
from benchmarks.models_bench import main, ratio_rows
from benchmarks.onnx_bench import Row


def rows(hpvm_ms: float) -> list[Row]:
    return [Row("bert, batch 1", "hpvm cpu", hpvm_ms, 1e-7, "compile 3.0 s"),
            Row("bert, batch 1", "onnxruntime", 10.0, 1e-7),
            Row("bert, batch 1", "torch (eager, no_grad)", 12.0, 0.0)]


def test_rows_become_ratios_to_onnxruntime_in_the_same_run():
    ratios = {r.target: r.ratio for r in ratio_rows(rows(17.0))}
    assert ratios == {"hpvm cpu": 1.7, "onnxruntime": 1.0, "torch (eager, no_grad)": 1.2}


def test_a_recorded_run_is_compared_row_by_row(tmp_path):
    record = tmp_path / "then.json"
    record.write_text(json.dumps({"command": "then", "size": None,
                                  "rows": [asdict(r) for r in ratio_rows(rows(20.0))]}))
    table = comparison_table(ratio_rows(rows(15.0)), record, None)
    line = next(row for row in table.splitlines() if "hpvm cpu" in row)
    assert "| 2.00 | 1.50 | 0.75x | faster |" in line


def test_compare_with_a_file_that_is_no_record_fails_before_running(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["--models", "bert", "--compare", str(broken)]) == 2
    assert "broken.json: not a recorded suite run" in capsys.readouterr().err


def test_a_variant_row_takes_its_targets_options_and_its_own():
    from benchmarks.models_bench import implementation_name, parse_args, target_options
    args = parse_args(["--device", "cuda", "--threads", "3", "--aten-variant", "precision=tf32",
                       "--cpu-variant", "blas=False"])
    assert args.aten_variant == ["precision=tf32"] and args.cpu_variant == ["blas=False"]
    assert implementation_name("aten", args) == "hpvm aten cuda"
    assert target_options("aten", args) == {"device": "cuda"}
    assert target_options("cpu", args) == {"threads": 3}
