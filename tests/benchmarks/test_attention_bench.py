"""attention_bench: onnxruntime's row, then hpvm's with the attention fused
(nothing of the scores' shape stored) and apart, each checked against
onnxruntime."""
from benchmarks.attention_bench import main, rows_of


def test_fused_and_apart_rows_match_onnxruntime():
    rows = rows_of(batch=1, length=24, threads=1, repeat=1)
    assert [r[1] for r in rows] == ["onnxruntime", "hpvm cpu, attention fused",
                                    "hpvm cpu, attention apart"]
    assert rows[1][2] == "0" and all(r[3] > 0 for r in rows)


def test_the_command_prints_the_table(capsys):
    assert main(["--lengths", "16", "--threads", "1", "--repeat", "1"]) == 0
    assert "| S=16, batch 1 | hpvm cpu, attention fused | 0 |" in capsys.readouterr().out
