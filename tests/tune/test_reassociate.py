"""Tuning with ``reassociate``: a node whose loops sum floats in a chain
gets a parallel-reduce parameter only when the user allows another order
(``tune(..., reassociate=True)``, ``hpvm tune --reassociate``); its values
say so, realise as ``parallel-reduce{reassociate=true}``, and keep the
results within rounding; the configuration carries the permission, so
``hpvm.compile(config=...)`` applies it and a saved one round-trips."""
import json

import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.cli import main
from hpvm.interp import Interpreter
from hpvm.ir.text import print_module
from hpvm.lang import Buffer, Out, f32, parallel_loop, task
from hpvm.testing import assert_outputs_close, usable_targets
from hpvm.tune import TuneError, TuningConfig, module_digest, space, tune


@hl.program
def energy(x: Buffer[f32, "N"], y: Buffer[f32, "N"], total: Out[Buffer[f32, 1]],
           scaled: Out[Buffer[f32, "N"]]):
    for i in parallel_loop(N, ins=(x,), outs=(scaled,), name="scale"):
        scaled[i] = x[i] * 2.0
    with task(ins=(x, y), outs=(total,), name="sum"):
        acc: f32 = 0.0
        for i in range(N):
            acc += x[i] * y[i]
        total[0] = acc


def energy_inputs(n=4099):
    rng = np.random.default_rng(2)
    return {"x": rng.standard_normal(n).astype(np.float32),
            "y": rng.standard_normal(n).astype(np.float32)}


def reduce_parameter(design):
    return [p for p in design if p.role == "parallel-reduce"]


def test_a_float_chain_is_a_parameter_only_when_the_order_may_change():
    assert reduce_parameter(space(energy, ["cpu"])) == []
    design = space(energy, ["cpu"], reassociate=True)
    [parameter] = reduce_parameter(design)
    assert parameter.name == "reduce energy.sum"
    # the cpu declines work-group trees, so only the chunks are offered there
    assert parameter.values == ("as written", "chunks 16 reassociated", "chunks 64 reassociated")
    assert "rounding changes" in parameter.about
    assert space(energy, ["cpu"], reassociate=True).realise({}).pipeline == ""


def test_a_reassociated_value_realises_and_keeps_the_result_within_rounding():
    design = space(energy, ["cpu"], reassociate=True)
    realised = design.realise({"reduce energy.sum": "chunks 16 reassociated"})
    assert realised.pipeline == ("parallel-reduce{form=chunks lanes=16 nodes=sum "
                                 "reassociate=true},dce")
    assert "@sum_partial [16]" in print_module(realised.module)
    inputs = energy_inputs()
    expected = Interpreter(energy.build()).run(**inputs)
    exe = hpvm.compile(realised.module, ["cpu"], options=realised.options)
    assert_outputs_close(exe(**inputs), expected, 1e-4, 1e-4)


@pytest.mark.skipif("gpu_opencl" not in usable_targets(), reason="no usable OpenCL device")
def test_a_work_group_tree_of_a_float_chain_runs_on_gpu_opencl():
    design = space(energy, ["gpu_opencl"], reassociate=True)
    assert "tree 32 reassociated" in design.parameter("reduce energy.sum").values
    realised = design.realise({"reduce energy.sum": "spread 65536 reassociated"})
    inputs = energy_inputs()
    exe = hpvm.compile(realised.module, ["gpu_opencl"], options=realised.options)
    assert_outputs_close(exe(**inputs), Interpreter(energy.build()).run(**inputs), 1e-4, 1e-4)


def test_the_configuration_carries_the_permission(tmp_path):
    module = energy.build()
    values = {"reduce energy.sum": "chunks 64 reassociated"}
    config = TuningConfig(module_digest(module), ["cpu"], values, reassociate=True)
    assert config.to_json()["reassociate"] is True
    config.save(tmp_path / "best.json")
    assert TuningConfig.load(tmp_path / "best.json") == config
    inputs = energy_inputs()
    exe = hpvm.compile(module, config=tmp_path / "best.json")
    assert "@energy.sum_partial" in exe.placement.targets
    assert_outputs_close(exe(**inputs), Interpreter(module).run(**inputs), 1e-4, 1e-4)
    without = TuningConfig(module_digest(module), ["cpu"], values)
    assert "reassociate" not in without.to_json()
    with pytest.raises(TuneError, match="no parameter 'reduce energy.sum'"):
        hpvm.compile(module, config=without)


def test_a_damaged_permission_is_refused():
    data = TuningConfig(module_digest(energy.build()), ["cpu"], {}).to_json()
    with pytest.raises(TuneError, match="'reassociate' must be a bool"):
        TuningConfig.from_json({**data, "reassociate": "yes"})


def test_tuning_with_reassociate_tries_the_forms_and_says_so(tmp_path, capsys):
    result = tune(energy, ["cpu"], energy_inputs(), budget=6, engine="random", repeat=1,
                  reassociate=True, record=tmp_path / "record.json")
    tried = {s.values.get("reduce energy.sum") for s in result.record.samples}
    assert any(value and value.endswith("reassociated") for value in tried)
    assert all(s.feasible for s in result.record.samples
               if str(s.values.get("reduce energy.sum", "")).startswith("chunks"))
    assert result.best.reassociate is True
    np.savez(tmp_path / "in.npz", **energy_inputs(257))
    (tmp_path / "energy.hpvm").write_text(print_module(energy.build()))
    assert main(["tune", str(tmp_path / "energy.hpvm"), "--list", "--reassociate"]) == 0
    assert "reduce energy.sum" in capsys.readouterr().out
    code = main(["tune", str(tmp_path / "energy.hpvm"), "-i", str(tmp_path / "in.npz"),
                 "-b", "2", "--engine", "random", "--repeat", "1", "--reassociate",
                 "--config-out", str(tmp_path / "best.json")])
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "best.json").read_text())["reassociate"] is True


@hl.program
def row_dots(m: Buffer[f32, "R", "N"], x: Buffer[f32, "N"], y: Out[Buffer[f32, "R"]]):
    for r in parallel_loop(R, ins=(m, x), outs=(y,), name="dots"):
        acc: f32 = 0.0
        for k in range(N):
            acc += m[r, k] * x[k]
        y[r] = acc


def test_a_replicated_float_chain_may_be_split_on_any_target():
    design = space(row_dots, ["cpu"], reassociate=True)
    assert design.parameter("reduce row_dots.dots").values == (
        "as written", "split 8 reassociated", "split 32 reassociated")
    realised = design.realise({"reduce row_dots.dots": "split 8 reassociated"})
    assert realised.pipeline == ("parallel-reduce{form=split lanes=8 layout=strided nodes=dots "
                                 "reassociate=true},dce")
    rng = np.random.default_rng(4)
    inputs = {"m": rng.standard_normal((7, 301)).astype(np.float32),
              "x": rng.standard_normal(301).astype(np.float32)}
    exe = hpvm.compile(realised.module, ["cpu"], options=realised.options)
    assert_outputs_close(exe(**inputs), Interpreter(row_dots.build()).run(**inputs), 1e-4, 1e-4)
