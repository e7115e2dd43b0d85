"""Artifact save/load: what the code generator produces is named after the
target, has JSON metadata, survives a save/load round trip, and a saved
executable runs after loading, here and in a fresh process."""
import json
import subprocess
import sys

import numpy as np
import pytest

from hpvm.target import Artifact
from hpvm_sdk.conformance.programs import by_name

PROGRAMS = [by_name("matmul"), by_name("lenet_tiny")]

RUN_SAVED = """
import sys
import numpy as np
from hpvm.runtime import Executable
folder, inputs_path, outputs_path = sys.argv[1:]
with np.load(inputs_path) as inputs:
    outputs = Executable.load(folder)(**dict(inputs))
np.savez(outputs_path, **outputs)
"""


def _compiled(hpvm_target, program):
    exe = hpvm_target.compile(program.load())
    hpvm_target.require_nodes(exe)
    return exe


def _expected(program, inputs):
    from hpvm.interp import run_module
    return run_module(program.load(), inputs)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_artifact_round_trips_through_a_folder(hpvm_target, program, tmp_path):
    artifact = _compiled(hpvm_target, program).artifacts[hpvm_target.name]
    assert artifact.target == hpvm_target.name
    json.dumps(artifact.metadata)  # metadata must be JSON-able to be saved
    artifact.save(tmp_path / "artifact")
    loaded = Artifact.load(tmp_path / "artifact")
    assert (loaded.target, loaded.files) == (artifact.target, artifact.files)
    assert loaded.metadata == json.loads(json.dumps(artifact.metadata))


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_saved_executable_runs_after_load(hpvm_target, program, tmp_path):
    from hpvm.runtime import Executable
    _compiled(hpvm_target, program).save(tmp_path / "exe")
    loaded = Executable.load(tmp_path / "exe", registry=hpvm_target.registry)
    inputs = program.inputs(seed=3)
    hpvm_target.assert_close(loaded(**inputs), _expected(program, inputs),
                             program.rtol, program.atol, program.name)
    loaded.close()


def test_saved_executable_runs_in_a_fresh_process(hpvm_target, tmp_path):
    for program in PROGRAMS:
        exe = hpvm_target.compile(program.load())
        if hpvm_target.nodes_on_target(exe):
            break
    else:
        pytest.skip(f"target '{hpvm_target.name}' claims no node of "
                    f"{' or '.join(p.name for p in PROGRAMS)}")
    exe.save(tmp_path / "exe")
    inputs = program.inputs(seed=4)
    np.savez(tmp_path / "inputs.npz", **inputs)
    result = subprocess.run([sys.executable, "-c", RUN_SAVED, str(tmp_path / "exe"),
                             str(tmp_path / "inputs.npz"), str(tmp_path / "outputs.npz")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"loading the saved executable failed:\n{result.stderr}"
    with np.load(tmp_path / "outputs.npz") as outputs:
        hpvm_target.assert_close(dict(outputs), _expected(program, inputs),
                                 program.rtol, program.atol, program.name)
