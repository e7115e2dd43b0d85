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

CPU_DEFAULT = ("node-fusion,copy-propagation,task-split,loop-instances{reused=true},"
               "loop-instances{outward=true},loop-interchange,loop-tile,loop-instances,"
               "loop-jam,dce")


def test_the_pipeline_here_is_the_cpu_target_s_default():
    cpu = pytest.importorskip("hpvm_cpu.target")
    assert cpu.CpuTarget.default_pipeline == CPU_DEFAULT


@pytest.mark.parametrize("name", sorted(polybench.FORMS))
def test_a_kernel_through_the_default_pipeline_computes_the_same(name):
    module = polybench.FORMS[name].build()
    changed = run_pipeline(module, CPU_DEFAULT, verify_each=True)
    for size, grid in ((9, 7), (4, 5)):
        inputs = polybench.inputs_for(name, np.random.default_rng(size), size, grid)
        want = Interpreter(module).run(**{k: np.copy(v) for k, v in inputs.items()})
        got = Interpreter(changed).run(**{k: np.copy(v) for k, v in inputs.items()})
        for port, value in want.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{name}: {port} at {size}")
