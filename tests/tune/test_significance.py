"""The tuner keeps the defaults unless a configuration beats them clearly
in the interleaved runs of the confirmation step (a sign test): a lower
median won by a few noisy runs is not taken, a consistent win is, and the
record keeps the runs and what the baseline was."""
from hpvm.tune.record import Sample, TuningRecord
from hpvm.tune.search import key_of
from hpvm.tune.significance import chance_of, wins_clearly

DEFAULTS = {"unroll": 0}
NOISY = {"unroll": 4}
STEADY = {"unroll": 2}
BASELINE_RUNS = [1.00, 1.02, 0.99, 1.01, 1.03, 0.98, 1.00, 1.02, 0.97, 1.01, 1.00, 0.99, 1.04,
                 1.00, 1.01]


def record(*confirmations, baseline=key_of(DEFAULTS)):
    history = TuningRecord("digest", ["cpu"], "random", ["seconds"], "measure", [])
    history.confirmations = [Sample(-1, values, True, {"seconds": sorted(runs)[len(runs) // 2]},
                                    rounds={"seconds": runs}) for values, runs in confirmations]
    history.baseline = baseline
    return history


def test_the_sign_test_takes_twelve_wins_of_fifteen():
    assert chance_of(12, 15) < 0.05 < chance_of(11, 15)
    assert wins_clearly([0.9] * 12 + [1.1] * 3, [1.0] * 15)
    assert not wins_clearly([0.9] * 11 + [1.1] * 4, [1.0] * 15)
    assert not wins_clearly([1.0] * 15, [1.0] * 15)  # ties only
    assert not wins_clearly([], [])


def test_a_lower_median_from_noisy_runs_keeps_the_defaults():
    # ahead by 3% in the median, but ahead in only 9 of the 15 runs
    noisy = [0.97 if k % 5 < 3 else 1.05 for k in range(15)]
    history = record((DEFAULTS, BASELINE_RUNS), (NOISY, noisy))
    assert history.confirmations[1].objectives["seconds"] < \
        history.confirmations[0].objectives["seconds"]
    assert history.best().values == DEFAULTS
    assert history.unclear_winner().values == NOISY


def test_a_steady_win_is_taken_even_where_a_noisier_median_is_lower():
    steady = [r * 0.95 for r in BASELINE_RUNS]
    noisy = [0.5 if k % 2 else 1.2 for k in range(15)]
    history = record((DEFAULTS, BASELINE_RUNS), (STEADY, steady), (NOISY, noisy))
    assert history.best().values == STEADY


def test_runs_and_baseline_survive_the_json_and_old_records_choose_by_median(tmp_path):
    noisy = [0.97 if k % 5 < 3 else 1.05 for k in range(15)]
    history = record((DEFAULTS, BASELINE_RUNS), (NOISY, noisy))
    history.save(tmp_path / "r.json")
    again = TuningRecord.load(tmp_path / "r.json")
    assert again.baseline == key_of(DEFAULTS) and again.confirmations[1].rounds["seconds"] == noisy
    assert again.best().values == DEFAULTS
    old = record((DEFAULTS, BASELINE_RUNS), (NOISY, noisy), baseline="")
    assert old.best().values == NOISY and old.unclear_winner() is None
