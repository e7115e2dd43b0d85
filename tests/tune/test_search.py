"""The search engines on a synthetic objective (no compile): exhaustive
search visits every configuration once, random search never repeats and
is reproducible, HyperMapper finds the optimum of a small space and learns
around infeasible samples; all of them stop at the budget and resume
without proposing what was seen."""
from pathlib import Path

import importlib.util

import pytest

from hpvm.ir.text import parse_module
from hpvm.tune import space
from hpvm.tune.search import BudgetSpent, Exhaustive, HyperMapperSearch, Outcome, RandomSearch, key_of

CHAIN = (Path(__file__).parent / "chain.hpvm").read_text()


def design():
    """The chain's space, less the default pipeline and who unrolls (which
    ``cost`` ignores)."""
    return space(parse_module(CHAIN), ["cpu"]).pinned({"default pipeline": False,
                                                       "unroll copies": True})


def cost(values) -> Outcome:
    """A bowl: best at lanes 8, rows 2, both fusions, full unroll; lanes 1 is infeasible."""
    if values["cpu.lanes"] == 1:
        return Outcome(False, error="lanes 1 is refused")
    seconds = 1.0 + abs(values["cpu.lanes"] - 8) / 4 + abs(values["cpu.rows"] - 2) \
        + (0 if values["fuse scale:offset"] else 0.5) + (0 if values["fuse offset:clamp"] else 0.5) \
        + (3 - values["unroll offset.k"]) * 0.1 + (0 if values["task parallelism"] else 0.05)
    return Outcome(True, {"seconds": seconds})


class Recorder:
    def __init__(self, budget):
        self.budget, self.seen, self.batches = budget, [], []

    def __call__(self, configurations):
        if len(self.seen) >= self.budget:
            raise BudgetSpent()
        self.batches.append(len(configurations))
        self.seen.extend(configurations)
        return [cost(values) for values in configurations]


def run(engine, budget, batch=1, seed=0, seen=None):
    recorder = Recorder(budget)
    try:
        engine.run(design(), recorder, budget, batch, seed, seen or {}, ["seconds"])
    except BudgetSpent:
        pass
    return recorder


def test_exhaustive_search_visits_every_configuration_once():
    space_ = design()
    recorder = run(Exhaustive(), space_.size, batch=7)
    keys = [key_of(v) for v in recorder.seen]
    assert len(keys) == len(set(keys)) == space_.size
    assert max(recorder.batches) == 7


def test_random_search_starts_from_the_defaults_never_repeats_and_is_seeded():
    first, second = run(RandomSearch(), 40, seed=3), run(RandomSearch(), 40, seed=3)
    assert first.seen == second.seen
    assert first.seen[0] == design().defaults()
    assert len({key_of(v) for v in first.seen}) == len(first.seen)
    assert run(RandomSearch(), 40, seed=4).seen != first.seen


def test_resumed_searches_skip_what_was_seen():
    earlier = run(RandomSearch(), 10)
    seen = {key_of(v): cost(v) for v in earlier.seen}
    later = run(RandomSearch(), 10, seed=1, seen=seen)
    assert not {key_of(v) for v in later.seen} & set(seen)


needs_hypermapper = pytest.mark.skipif(importlib.util.find_spec("hypermapper") is None,
                                       reason="hypermapper is not installed (pip install 'hpvm[tune]')")


@needs_hypermapper
def test_hypermapper_finds_a_good_configuration_and_avoids_infeasible_ones():
    recorder = run(HyperMapperSearch(), 40, batch=2)
    assert len(recorder.seen) == 40
    outcomes = [cost(v) for v in recorder.seen]
    best = min(o.objectives["seconds"] for o in outcomes if o.feasible)
    assert best <= 1.3  # the optimum is 1.0; the median of the space is about 3
    late_infeasible = sum(not o.feasible for o in outcomes[20:])
    assert late_infeasible <= 5


@needs_hypermapper
def test_hypermapper_resumes_from_earlier_samples():
    earlier = run(RandomSearch(), 12)
    seen = {key_of(v): cost(v) for v in earlier.seen}
    later = run(HyperMapperSearch(), 8, seen=seen)
    assert len(later.seen) == 8


@needs_hypermapper
def test_hypermapper_optimises_two_objectives():
    def two(values):
        outcome = cost(values)
        if outcome.feasible:  # the second objective pulls the other way: fewer lanes
            outcome.objectives["compile_seconds"] = values["cpu.lanes"] / 4.0
        return outcome

    seen = []

    def evaluate(configurations):
        if len(seen) >= 16:
            raise BudgetSpent()
        seen.extend(configurations)
        return [two(v) for v in configurations]

    with pytest.raises(BudgetSpent):
        HyperMapperSearch().run(design(), evaluate, 16, 1, 0, {}, ["seconds", "compile_seconds"])
    assert len(seen) == 16
