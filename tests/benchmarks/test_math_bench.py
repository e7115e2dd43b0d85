"""math_bench: each function's row against numpy's, with its errors in ulp."""
from benchmarks.math_bench import CASES, format_rows, main, rows


def test_every_function_has_a_row_within_a_few_ulp():
    table = rows(size=4096, threads=1, repeat=1)
    assert [row[0] for row in table] == list(CASES)
    for name, hpvm_ns, numpy_ns, hpvm_ulp, numpy_ulp in table:
        assert hpvm_ns > 0 and numpy_ns > 0, name
        assert hpvm_ulp <= 3.0, name
    lines = format_rows(table)
    assert lines[0].startswith("| function |") and len(lines) == len(CASES) + 2


def test_the_command_prints_the_table(capsys):
    assert main(["--size", "1024", "--repeat", "1"]) == 0
    assert "| sin x and cos x |" in capsys.readouterr().out
