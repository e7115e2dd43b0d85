"""The warm start: the default pipeline first, then one schedule form
changed around it, every form parameter once before any twice, never a
configuration already measured; the tuner measures it after the
defaults and before the engine, in at most half the budget."""
from pathlib import Path

import numpy as np

from hpvm.ir.text import parse_module
from hpvm.tune import space, tune
from hpvm.tune.search import key_of
from hpvm.tune.warm_start import SCHEDULE_ROLES, screening

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
