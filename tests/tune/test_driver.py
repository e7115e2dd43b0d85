"""The tuning loop end to end on the cpu target: the defaults first, the
budget kept, a record written after every batch and resumed, a best
configuration that compiles and computes the right result; samples that
fail, hang or compute a wrong result are infeasible, never a crash; bad
requests are clear errors; ``hpvm tune`` shows progress, prints the
winner in words and writes the record, configuration and SVG."""
import json
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.cli import main
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline
from hpvm.tune import TuneError, TuningConfig, tune
from hpvm.tune.evaluate import SampleJob, evaluate_sample
from hpvm.tune.record import TuningRecord
from hpvm.tune.search import key_of

HERE = Path(__file__).parent
CHAIN = (HERE / "chain.hpvm").read_text()
INPUTS = {"a": np.linspace(-3, 3, 64, dtype=np.float32), "bias": np.array([0.5, -1, 0.25], np.float32)}


def test_tuning_records_every_sample_and_returns_a_working_best(tmp_path):
    module = parse_module(CHAIN)
    record = tmp_path / "record.json"
    result = tune(module, ["cpu"], INPUTS, budget=4, engine="random", repeat=1, record=record)
    samples = result.record.samples
    assert len(samples) == 4 and samples[0].values == result.space.defaults()
    assert all(s.feasible and s.objectives["seconds"] > 0 for s in samples)
    assert TuningRecord.load(record).to_json() == result.record.to_json()
    assert result.best.values == result.record.best().values
    confirmed = result.record.confirmations
    assert 2 <= len(confirmed) <= 5 and result.space.defaults() in [c.values for c in confirmed]
    assert result.record.best() in confirmed and result.speedup is not None
    assert "best seconds" in result.summary()
    assert repr(result) == f"<TuneResult: {result.summary().splitlines()[0]}>"
    exe = hpvm.compile(module, config=result.best)
    np.testing.assert_allclose(exe(**INPUTS)["c"], Interpreter(module).run(**INPUTS)["c"])


def test_the_default_pipeline_is_confirmed_and_a_config_choosing_it_compiles_through_it():
    """Whether the first target's default pipeline runs is a parameter of
    the search; the confirmation step measures the defaults through it,
    and a configuration that sets it compiles as ``pipeline="default"``
    does."""
    from hpvm.tune import TuningConfig
    module = parse_module(CHAIN)
    result = tune(module, ["cpu"], INPUTS, budget=2, engine="random", repeat=1, confirm=1)
    chosen = result.space.default_pipeline()
    assert chosen == {**result.space.defaults(), "default pipeline": True}
    assert result.space.parameter("default pipeline") in result.space.parameters
    assert all("default pipeline" in s.values for s in result.record.samples)
    assert chosen in [c.values for c in result.record.confirmations]
    assert result.space.realise(chosen).options["pipeline"] == "default"
    exe = hpvm.compile(module, config=TuningConfig(result.space.digest, ["cpu"], chosen))
    np.testing.assert_allclose(exe(**INPUTS)["c"], Interpreter(module).run(**INPUTS)["c"])
    fused = hpvm.compile(module, ["cpu"], options={"pipeline": "default"})
    fused(**INPUTS)
    assert [r.node for r in exe.report().node_records] == \
        [r.node for r in fused.report().node_records]
    assert len(exe.report().node_records) < 3   # the chain's three nodes fused


def test_a_resumed_run_goes_on_to_the_budget(tmp_path):
    module = parse_module(CHAIN)
    record = tmp_path / "record.json"
    tune(module, ["cpu"], INPUTS, budget=2, engine="random", repeat=1, record=record)
    result = tune(module, ["cpu"], INPUTS, budget=4, engine="random", repeat=1, record=record,
                  resume=True)
    keys = [key_of(s.values) for s in result.record.samples]
    assert len(keys) == len(set(keys)) == 4


def test_a_record_of_another_problem_cannot_be_resumed(tmp_path):
    record = tmp_path / "record.json"
    tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=1, repeat=1, record=record)
    with pytest.raises(TuneError, match="cannot resume: it records another parameters"):
        tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=2, passes=(), record=record,
             resume=True)


def test_a_sample_past_its_time_out_is_infeasible():
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=1, timeout=0.01)
    sample = result.record.samples[0]
    assert not sample.feasible and "ran for more than" in sample.error or "hung" in sample.error
    assert result.best is None and result.summary() == "no feasible configuration was found"


def test_a_wrong_result_is_infeasible(tmp_path):
    module = parse_module(CHAIN)
    np.savez(tmp_path / "in.npz", **INPUTS)
    wrong = {"c": Interpreter(module).run(**INPUTS)["c"] + 1}
    np.savez(tmp_path / "ref.npz", **wrong)
    job = SampleJob(print_module(module), ("cpu",), {}, str(tmp_path / "in.npz"),
                    str(tmp_path / "ref.npz"), repeat=1)
    outcome = evaluate_sample(job)
    assert not outcome.feasible and "wrong result: output 'c' differs" in outcome.error
    failing = evaluate_sample(SampleJob(**{**job.__dict__, "values": {"cpu.lanes": 3}}))
    assert not failing.feasible and "cannot be 3" in failing.error


@pytest.mark.parametrize("kwargs, message", [
    ({"budget": 0}, "a budget of 0 samples tunes nothing"),
    ({"engine": "annealing"}, "no search engine 'annealing'"),
    ({"mode": "guess"}, "no mode 'guess'"),
    ({"objectives": ["speed"]}, "a measured sample gives no 'speed' .*seconds, node_seconds"),
    ({"objectives": []}, "no objectives to tune for"),
])
def test_bad_requests_are_clear_errors(kwargs, message):
    with pytest.raises(TuneError, match=message):
        tune(parse_module(CHAIN), ["cpu"], INPUTS, **{"budget": 2, **kwargs})


def test_an_empty_space_is_an_error():
    single = run_pipeline(parse_module(CHAIN), "node-fusion")  # one node, no knobs on interp
    with pytest.raises(TuneError, match="nothing to tune"):
        tune(single, ["interp"], INPUTS, budget=2, passes=())


def test_a_given_reference_stands_for_the_interpreter(monkeypatch):
    """Samples are checked against the outputs the caller gives, and the
    interpreter is not run."""
    module = parse_module(CHAIN)
    expected = Interpreter(module).run(**INPUTS)

    def refused(*args, **kwargs):
        raise AssertionError("the interpreter ran although a reference was given")
    monkeypatch.setattr(Interpreter, "run", refused)
    right = tune(module, ["cpu"], INPUTS, budget=1, repeat=1, confirm=0, reference=expected)
    assert right.record.samples[0].feasible
    wrong = tune(module, ["cpu"], INPUTS, budget=1, repeat=1, confirm=0,
                 reference={"c": expected["c"] + 1})
    assert "output 'c' differs from the reference" in wrong.record.samples[0].error
    with pytest.raises(TuneError, match=r"'d', which the program does not output \(fix: name "
                                        r"its outputs: c\)"):
        tune(module, ["cpu"], INPUTS, budget=1, reference={"d": expected["c"]})


def test_the_nodes_own_times_are_an_objective():
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=2, engine="random", repeat=1,
                  objectives=["node_seconds"], confirm=0)
    for sample in result.record.samples:
        assert 0 < sample.objectives["node_seconds"] <= sample.objectives["seconds"]
    assert "best node_seconds" in result.summary()


def test_estimating_needs_a_cost_model():
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=1, mode="estimate")
    assert "has no cost model" in result.record.samples[0].error


def test_the_command_tunes_compiles_and_draws(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", **INPUTS)
    (tmp_path / "chain.hpvm").write_text(CHAIN)
    source = str(tmp_path / "chain.hpvm")
    assert main(["tune", source, "--list"]) == 0
    assert "fuse node 'scale' into its consumer 'offset'" in capsys.readouterr().out
    files = {name: str(tmp_path / name) for name in ("record.json", "best.json", "t.svg")}
    code = main(["tune", source, "-i", files["record.json"].replace("record.json", "in.npz"),
                 "-b", "3", "--engine", "random", "--repeat", "1", "-o", files["record.json"],
                 "--config-out", files["best.json"], "--svg", files["t.svg"],
                 "--objectives", "seconds,compile_seconds"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "3/3" in captured.err and "best seconds" in captured.out
    assert TuningConfig.load(files["best.json"]).targets == ["cpu"]
    svg = Path(files["t.svg"]).read_text()
    assert svg.startswith("<svg") and "best so far" in svg and "Pareto front" in svg
    assert main(["compile", source, "--config", files["best.json"], "-o",
                 str(tmp_path / "exe")]) == 0
    saved = json.loads((tmp_path / "exe" / "executable.json").read_text())
    assert saved["config"]["values"] == json.loads(Path(files["best.json"]).read_text())["values"]


def test_the_command_checks_samples_against_a_reference_file(tmp_path, capsys):
    module = parse_module(CHAIN)
    np.savez(tmp_path / "in.npz", **INPUTS)
    np.savez(tmp_path / "out.npz", c=Interpreter(module).run(**INPUTS)["c"] + 1)
    (tmp_path / "chain.hpvm").write_text(CHAIN)
    code = main(["tune", str(tmp_path / "chain.hpvm"), "-i", str(tmp_path / "in.npz"),
                 "--reference", str(tmp_path / "out.npz"), "-b", "1", "--repeat", "1",
                 "--confirm", "0"])
    assert code == 1 and "no feasible configuration" in capsys.readouterr().out


def test_command_errors_name_the_fix(tmp_path, capsys):
    (tmp_path / "chain.hpvm").write_text(CHAIN)
    assert main(["tune", str(tmp_path / "chain.hpvm")]) == 1
    assert "needs inputs (fix: give --inputs" in capsys.readouterr().err
    np.savez(tmp_path / "in.npz", **INPUTS)
    (tmp_path / "out.npy").write_bytes(b"\x93NUMPY")
    assert main(["tune", str(tmp_path / "chain.hpvm"), "-i", str(tmp_path / "in.npz"),
                 "--reference", str(tmp_path / "out.npy")]) == 1
    assert "out.npy" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[]")
    assert main(["compile", str(tmp_path / "chain.hpvm"), "--config", str(tmp_path / "bad.json"),
                 "-o", str(tmp_path / "exe")]) == 1
    assert "not a tuning configuration" in capsys.readouterr().err


def test_partitioning_tunes_each_target_alone_first():
    from hpvm.tune.driver import phases
    from hpvm.tune import space
    design = space(parse_module(CHAIN), ["cpu", "interp"])
    plan = phases(design, 12)
    assert [name for name, _, _, _ in plan] == ["cpu", "interp", "joint"]
    _, interp_alone, pins, share = plan[1]
    assert share == 4 and pins["place @main.scale"] == "interp" and pins["cpu.lanes"] == 16
    assert "cpu.lanes" not in [p.name for p in interp_alone]
    result = tune(parse_module(CHAIN), ["cpu", "interp"], INPUTS, budget=12, engine="random",
                  repeat=1, confirm=0)
    samples = result.record.samples
    places = [{v for k, v in s.values.items() if k.startswith("place")} for s in samples]
    # the defaults, then 11 samples: 3 on cpu alone, 3 on interp alone, 5 joint
    assert places[1:4] == [{"cpu"}] * 3 and places[4:7] == [{"interp"}] * 3
    assert "partitioning: each of cpu, interp was tuned alone first" in result.summary()


def test_partitioning_confirms_the_best_of_each_target_alone():
    """The final choice is measured from among each single target's best
    too, so it is never a sample that only looked better by luck."""
    result = tune(parse_module(CHAIN), ["cpu", "interp"], INPUTS, budget=12, engine="random",
                  repeat=1, confirm=1)
    confirmed = [c.values for c in result.record.confirmations]
    for target in ("cpu", "interp"):
        alone = [s for s in result.record.feasible()
                 if {v for k, v in s.values.items() if k.startswith("place")} == {target}]
        assert min(alone, key=lambda s: s.objectives["seconds"]).values in confirmed
    assert result.record.best() in result.record.confirmations


def test_the_program_as_written_is_confirmed_beside_the_cpus_default_schedule():
    """A matrix product qualifies for the cpu's register tiles, so the
    space offers their sizes and none; the confirmation step measures the
    defaults (tiled) and the program as written (register_tiles off)
    interleaved, and the winner is one of the confirmed."""
    from hpvm.ir.text import load_module
    module = load_module(HERE.parents[1] / "examples" / "ir" / "matmul.hpvm")
    rng = np.random.default_rng(0)
    inputs = {"a": rng.standard_normal((24, 20)).astype(np.float32),
              "b": rng.standard_normal((20, 40)).astype(np.float32)}
    result = tune(module, ["cpu"], inputs, budget=2, engine="random", repeat=1, confirm=1,
                  passes=())
    knobs = {p.name: p for p in result.space}
    assert knobs["cpu.register_tiles"].as_written is False
    assert {"cpu.tile_rows", "cpu.tile_panel"} <= set(knobs)
    confirmed = [c.values for c in result.record.confirmations]
    as_written = result.space.as_written()
    assert as_written["cpu.register_tiles"] is False and as_written in confirmed
    assert result.space.defaults() in confirmed
    assert all(c.feasible for c in result.record.confirmations)
    assert result.record.best() in result.record.confirmations


def test_interleaved_measurement_gives_one_outcome_per_sample_and_refusals_in_place(tmp_path):
    from hpvm.tune.evaluate import evaluate_interleaved
    from hpvm.tune.space import space
    module = parse_module(CHAIN)
    design = space(module, ["cpu"])
    path = tmp_path / "inputs.npz"
    np.savez(path, **INPUTS)
    good = SampleJob(print_module(module), ("cpu",), design.defaults(), str(path), None,
                     repeat=2)
    bad = SampleJob(print_module(module), ("cpu",), {"no such parameter": 1}, str(path), None,
                    repeat=2)
    outcomes = evaluate_interleaved([good, bad, good])
    assert [o.feasible for o in outcomes] == [True, False, True]
    assert "no such parameter" in outcomes[1].error
