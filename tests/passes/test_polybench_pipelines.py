"""Every PolyBench kernel (benchmarks/polybench.py and the modules it
serves) through the cpu target's default pipeline computes what the
kernel as written computes, bit for bit in the golden model: the passes
that find parallel loops, orders, triangles and tiles in code nobody
wrote for them must leave every dependence as it was."""
import numpy as np
import pytest

from hpvm.interp import Interpreter
from hpvm.passes import run_pipeline

from benchmarks import polybench

CPU_DEFAULT = ("node-fusion,copy-propagation,scratch-expansion,task-split,"
               "loop-instances{reused=true},"
               "loop-instances{outward=true},loop-interchange,loop-tile,loop-instances,"
               "loop-jam,dce")


def test_the_pipeline_here_is_the_cpu_target_s_default():
    cpu = pytest.importorskip("hpvm_cpu.target")
    assert cpu.CpuTarget.default_pipeline == CPU_DEFAULT


CPU_FOR_4_CORES = CPU_DEFAULT.replace("task-split", "task-split{cores=4}").replace(
    "outward=true", "outward=true cores=4").replace(
    "loop-tile,loop-instances", "loop-tile,task-split{cores=4},loop-instances{cores=4}")
"""The cpu's default pipeline for 4 cores: strips of columns (strip_instances.py)."""


def test_the_pipeline_for_four_cores_is_the_cpu_target_s():
    cpu = pytest.importorskip("hpvm_cpu.target")
    assert cpu.CpuTarget().pipeline_for({"threads": 4}) == CPU_FOR_4_CORES


@pytest.mark.parametrize("pipeline", [CPU_DEFAULT, CPU_FOR_4_CORES])
@pytest.mark.parametrize("name", sorted(polybench.FORMS))
def test_a_kernel_through_the_default_pipeline_computes_the_same(name, pipeline, monkeypatch):
    import hpvm.passes.strip_instances as strips
    monkeypatch.setattr(strips, "WIDEST", 2)     # several strips at these sizes
    module = polybench.FORMS[name].build()
    computes_the_same(name, module, run_pipeline(module, pipeline, verify_each=True))


def computes_the_same(name: str, module, changed, sizes=((9, 7), (4, 5))) -> None:
    """``changed`` computes what PolyBench kernel ``name`` as ``module``
    computes, bit for bit in the interpreter, at each (size, grid)."""
    for size, grid in sizes:
        inputs = polybench.inputs_for(name, np.random.default_rng(size), size, grid)
        want = Interpreter(module).run(**{k: np.copy(v) for k, v in inputs.items()})
        got = Interpreter(changed).run(**{k: np.copy(v) for k, v in inputs.items()})
        for port, value in want.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{name}: {port} at {size}")
