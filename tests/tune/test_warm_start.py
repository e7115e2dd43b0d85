"""The warm start: the default pipeline first, then one schedule form
changed around it, as many changes to a parameter as its nodes' share of
the defaults' time gives it (every form parameter once before any twice
without that profile), never a configuration already measured; the tuner
measures it after the defaults and before the engine, in at most half
the budget."""
from pathlib import Path

import numpy as np

from hpvm.ir.text import parse_module
from hpvm.tune import space, tune
from hpvm.tune.parameter import Parameter
from hpvm.tune.record import TuningRecord
from hpvm.tune.search import Outcome, key_of
from hpvm.tune.space import Space
from hpvm.tune.warm_start import SCHEDULE_ROLES, Screening, screening, warm_start

CHAIN = (Path(__file__).parent / "chain.hpvm").read_text()
INPUTS = {"a": np.linspace(-3, 3, 64, dtype=np.float32),
          "bias": np.array([0.5, -1, 0.25], np.float32)}


def changed(design, values):
    return {k: v for k, v in values.items() if v != design.parameter(k).default}


def test_the_default_pipeline_then_each_form_once_around_it():
    design = space(parse_module(CHAIN), ["cpu"])
    chosen = screening(design, 10, seed=0)
    assert chosen[0] == design.default_pipeline()
    moves = [changed(design, values) for values in chosen[1:]]
    assert sorted(map(sorted, moves)) == [["default pipeline", "fuse offset:clamp"],
                                          ["default pipeline", "fuse scale:offset"]]
    forms = [p.name for p in design if p.role in SCHEDULE_ROLES]
    assert forms == ["fuse scale:offset", "fuse offset:clamp"]


def test_the_count_and_what_was_seen_are_kept():
    design = space(parse_module(CHAIN), ["cpu"])
    everything = screening(design, 10, seed=3)
    assert screening(design, 2, seed=3) == everything[:2]
    seen = {key_of(everything[0])}
    assert screening(design, 10, seed=3, seen=seen) == everything[1:]
    assert screening(design, 0, seed=3) == []


def test_a_space_without_a_default_pipeline_screens_around_the_defaults():
    design = space(parse_module(CHAIN), ["cpu"], passes=("node-fusion",))
    design = design.pinned({"default pipeline": False})
    chosen = screening(design, 10, seed=1)
    assert chosen[0] == design.defaults()
    assert len(chosen) == 3


def test_the_tuner_measures_the_warm_start_after_the_defaults():
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=8, engine="random", repeat=1)
    samples = [s.values for s in result.record.samples]
    design = result.space
    assert samples[0] == design.defaults()
    assert samples[1] == design.default_pipeline()
    assert {tuple(sorted(changed(design, v))) for v in samples[2:4]} == {
        ("default pipeline", "fuse scale:offset"), ("default pipeline", "fuse offset:clamp")}
    assert "warm start, before the engine: the default pipeline and 2 single changes of the " \
        "schedule forms" in result.notes


def forms_space():
    """The chain with three form parameters of known values."""
    module = parse_module(CHAIN)
    return Space(module, ["cpu"], [
        Parameter("reduce main.offset", ("as written", "tree 8", "tree 32", "chunks 8", "split 8"),
                  "as written", "a reduction's form", "parallel-reduce", "offset"),
        Parameter("fuse scale:offset", (False, True), False, "a fusion", "node-fusion",
                  "scale:offset"),
        Parameter("tile main.clamp", ("as written", "group 2x2", "group 4x4"), "as written",
                  "a tile", "tile", "clamp")])


def test_the_changes_go_where_the_time_went():
    design = forms_space()
    profile = {"offset": 8e-3, "scale": 0.0, "clamp": 2e-3}
    for seed in range(5):
        moves = [changed(design, v) for v in screening(design, 6, seed, profile=profile)[1:]]
        names = [next(iter(move)) for move in moves]
        assert sorted(names[:4]) == ["fuse scale:offset"] + ["reduce main.offset"] * 3
        forms = [move["reduce main.offset"].split()[0] for move in moves
                 if "reduce main.offset" in move]
        assert sorted(forms[:3]) == ["chunks", "split", "tree"]   # each kind before a second
        trees = [move["reduce main.offset"] for move in moves
                 if move.get("reduce main.offset", "").startswith("tree")]
        assert trees[0] == "tree 8"                                 # the kind's first listed
        assert names[4] in ("reduce main.offset", "tile main.clamp")


def test_without_a_profile_every_form_parameter_once_before_any_twice():
    design = forms_space()
    for profile in (None, {}, {"elsewhere": 1.0}, {"offset": 0.0, "scale": 0.0, "clamp": 0.0}):
        chosen = screening(design, 4, 0, profile=profile)
        names = [next(iter(changed(design, v))) for v in chosen[1:]]
        assert sorted(names) == ["fuse scale:offset", "reduce main.offset", "tile main.clamp"]


def test_each_sample_records_the_time_of_each_node(tmp_path):
    record = tmp_path / "record.json"
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=2, engine="random", repeat=2,
                  record=record)
    first = result.record.samples[0]
    assert set(first.profile) == {"scale", "offset", "clamp"}
    assert all(seconds > 0 for seconds in first.profile.values())
    assert TuningRecord.load(record).first_profile() == first.profile == \
        result.record.first_profile()


def test_a_parameter_whose_nodes_the_profile_lacks_counts_as_the_average():
    design = forms_space()
    profile = {"offset": 8e-3, "scale": 8e-3}          # clamp's time not reported
    chosen = screening(design, 4, 0, profile=profile)
    names = [next(iter(changed(design, v))) for v in chosen[1:]]
    assert "tile main.clamp" in names


TWO_KINDS = ("as written", "tree 8", "tree 32", "chunks 8")
ONE_KIND = ("as written", "tree 8", "tree 32")


def two_forms_space(reductions=TWO_KINDS):
    module = parse_module(CHAIN)
    return Space(module, ["cpu"], [
        Parameter("reduce main.offset", reductions,
                  "as written", "a reduction's form", "parallel-reduce", "offset"),
        Parameter("tile main.clamp", ("as written", "group 2x2", "group 4x4"), "as written",
                  "a tile", "tile", "clamp")])


def order_after(first_seconds, feasible=True, seed=0, reductions=ONE_KIND):
    """The parameters the changes after the first go to, where the first
    (the reduction's) took ``first_seconds`` against the base's 1.0."""
    design = two_forms_space(reductions)
    screen = Screening(design, seed, profile={"offset": 3.0, "clamp": 2.5})
    base, first = screen.take(2)
    assert changed(design, base) == {} and list(changed(design, first)) == ["reduce main.offset"]
    screen.learn([base, first], [Outcome(True, {"seconds": 1.0}),
                                 Outcome(feasible, {"seconds": first_seconds} if feasible else {})],
                 "seconds")
    return [next(iter(changed(design, v))) for v in screen.take(3)]


def test_a_change_that_lost_counts_as_more_than_one():
    for seed in range(4):
        # won: the reduction (3 s against the tile's 2.5) gets every other change
        assert order_after(0.5, seed=seed) == ["tile main.clamp", "reduce main.offset",
                                               "tile main.clamp"]
        # 8x slower: it counts as 1 + 3 changes, and both tiles come first
        assert order_after(8.0, seed=seed) == ["tile main.clamp", "tile main.clamp",
                                               "reduce main.offset"]
        # ... but not while a kind of reduction (chunks after a tree) has had no change
        assert order_after(8.0, seed=seed, reductions=TWO_KINDS) == [
            "tile main.clamp", "reduce main.offset", "tile main.clamp"]
    assert order_after(None, feasible=False)[:1] == ["tile main.clamp"]


def test_the_warm_start_chooses_each_batch_after_the_last_ones_outcomes():
    design = two_forms_space(ONE_KIND)
    measured = []

    def call(configurations):   # every change of the reduction 8x slower than the base
        measured.extend(configurations)
        return [Outcome(True, {"seconds": 8.0 if "reduce main.offset" in changed(design, v)
                               else 1.0}) for v in configurations]

    def order(batch):
        measured.clear()
        notes = []
        warm_start(design, call, 5, batch, 0, {}, notes, {"offset": 3.0, "clamp": 2.5})
        assert notes == ["warm start, before the engine: 4 single changes of the schedule forms"]
        return [next(iter(changed(design, v)), "base") for v in measured]

    assert order(1) == ["base", "reduce main.offset", "tile main.clamp", "tile main.clamp",
                        "reduce main.offset"]
    assert order(5) == ["base", "reduce main.offset", "tile main.clamp", "reduce main.offset",
                        "tile main.clamp"]


def test_the_last_place_puts_the_winning_changes_together():
    design = two_forms_space()
    measured, notes = [], []

    def call(configurations):   # every change wins, the reduction's most
        measured.extend(configurations)
        return [Outcome(True, {"seconds": 1.0 - 0.5 * ("reduce main.offset" in changed(design, v))
                               - 0.2 * ("tile main.clamp" in changed(design, v))})
                for v in configurations]

    warm_start(design, call, 5, 1, 0, {}, notes, {"offset": 3.0, "clamp": 2.5})
    assert sorted(changed(design, measured[-1])) == ["reduce main.offset", "tile main.clamp"]
    assert [len(changed(design, v)) for v in measured] == [0, 1, 1, 1, 2]
    assert notes == ["warm start, before the engine: 3 single changes of the schedule forms and "
                     "the winning changes of reduce main.offset, tile main.clamp together"]


def test_a_loop_nest_weighs_what_the_nodes_running_its_function_took():
    module = parse_module(CHAIN)
    design = Space(module, ["cpu"], [
        Parameter("block offset.k", (0, 16, 32), 0, "blocks", "loop-tile", "offset.k"),
        Parameter("tile main.clamp", ("as written", "group 2x2"), "as written", "a tile", "tile",
                  "clamp")])
    for seed in range(4):
        chosen = screening(design, 3, seed, profile={"offset": 8e-3, "clamp": 1e-3})
        assert [next(iter(changed(design, v))) for v in chosen[1:]] == ["block offset.k"] * 2


def test_the_nodes_a_pipeline_makes_count_for_the_node_they_came_from():
    """The default pipeline runs ``offset`` as ``offset_partial`` and
    ``offset`` (parallel-reduce's split form), or as ``clamp_4x4`` and an
    empty ``clamp`` (register-tile's fill): their time is the node's."""
    design = forms_space()
    profile = {"offset": 0.0, "offset_partial": 8e-3, "scale": 0.0, "clamp": 0.0,
               "clamp_4x4": 2e-3}
    for seed in range(5):
        moves = [changed(design, v) for v in screening(design, 6, seed, profile=profile)[1:]]
        names = [next(iter(move)) for move in moves]
        assert sorted(names[:4]) == ["fuse scale:offset"] + ["reduce main.offset"] * 3
