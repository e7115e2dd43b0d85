"""The tuner's summary says where the time went: each node's time in the
defaults' run and in the best's (the nodes a fusion made included), the
nodes that took the most first, only where both runs were measured."""
from pathlib import Path

from hpvm.ir.text import parse_module
from hpvm.tune.parameter import Parameter
from hpvm.tune.record import Sample, TuningRecord
from hpvm.tune.result import TIME_PER_NODE_ROWS, TuneResult
from hpvm.tune.space import Space

CHAIN = parse_module((Path(__file__).parent / "chain.hpvm").read_text())
DESIGN = Space(CHAIN, ["cpu"], [Parameter("fuse scale:offset", (False, True), False, "a fusion",
                                          "node-fusion", "scale:offset")])
DEFAULTS = {"fuse scale:offset": False}
FUSED = {"fuse scale:offset": True}


def result(*samples):
    record = TuningRecord(DESIGN.digest, ["cpu"], "random", ["seconds"], "measure", [])
    record.samples = [Sample(i, values, True, {"seconds": seconds}, profile=profile)
                      for i, (values, seconds, profile) in enumerate(samples)]
    return TuneResult(DESIGN, record, None, [])


def test_the_time_of_each_node_before_and_after():
    summary = result((DEFAULTS, 3e-3, {"scale": 1e-3, "offset": 1.5e-3, "clamp": 5e-4}),
                     (FUSED, 2e-3, {"scale_offset": 1.5e-3, "clamp": 5e-4})).summary()
    table = summary[summary.index("time per node"):].splitlines()
    assert table == ["time per node (ms), the defaults -> the best:",
                     "  offset           1.500 ->         -",
                     "  scale_offset         - ->     1.500",
                     "  scale            1.000 ->         -",
                     "  clamp            0.500 ->     0.500"]


def test_no_table_where_the_defaults_win_or_nothing_was_profiled():
    assert "time per node" not in result((DEFAULTS, 1e-3, {"scale": 1e-3}),
                                         (FUSED, 2e-3, {"scale_offset": 2e-3})).summary()
    assert "time per node" not in result((DEFAULTS, 3e-3, {}), (FUSED, 2e-3, {})).summary()


def test_a_long_table_is_cut_to_the_nodes_that_took_the_most():
    many = {f"node{k}": k * 1e-4 for k in range(20)}
    summary = result((DEFAULTS, 3e-3, many), (FUSED, 1e-3, {"node19": 1e-4})).summary()
    rows = summary[summary.index("time per node"):].splitlines()[1:]
    assert len(rows) == TIME_PER_NODE_ROWS + 1 and rows[0].split()[0] == "node19"
    assert rows[-1] == f"  ({20 - TIME_PER_NODE_ROWS} more nodes)"
