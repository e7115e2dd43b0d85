"""rows_bench: every model has onnxruntime's row and hpvm's with and
without fuse-rows, each checked against onnxruntime; fuse-rows leaves one
node where it fuses."""
from benchmarks.rows_bench import cases, main, rows_of


def test_fuse_rows_makes_one_node_of_each_normalisation_and_matches_onnxruntime():
    for name, model in cases(batch=1).items():
        if "LayerNormalization" in name or "by hand" in name:
            rows = rows_of(name, model, ["cpu"], threads=1, repeat=1)
            assert [r[1] for r in rows] == ["onnxruntime", "hpvm without fuse-rows, cpu",
                                            "hpvm with fuse-rows, cpu"]
            assert rows[2][2] == "1 node" != rows[1][2], name
            assert all(r[3] > 0 for r in rows)


def test_the_command_prints_the_table(capsys):
    assert main(["--targets", "cpu", "--threads", "1", "--repeat", "1", "--batch", "1"]) == 0
    out = capsys.readouterr().out
    assert "| LogSoftmax 128x1000 | hpvm with fuse-rows, cpu | 1 node |" in out
