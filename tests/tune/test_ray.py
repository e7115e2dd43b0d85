"""The Ray executor on a local ``ray.init()``: samples run as Ray tasks,
a batch at a time, with the same results the local executor gives, and a
sample past its time-out is infeasible."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hpvm.ir.text import parse_module
from hpvm.tune import RayExecutor, tune

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="ray is not installed (pip install 'hpvm[ray]')")

CHAIN = (Path(__file__).parent / "chain.hpvm").read_text()
INPUTS = {"a": np.linspace(-3, 3, 64, dtype=np.float32), "bias": np.array([0.5, -1, 0.25], np.float32)}


@pytest.fixture(scope="module")
def ray_executor():
    executor = RayExecutor(jobs=2)
    yield executor
    executor.close()


def test_samples_run_as_ray_tasks_in_batches(ray_executor):
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=5, engine="random", repeat=1,
                  executor=ray_executor)
    assert ray_executor.jobs == 2
    assert len(result.record.samples) == 5
    assert all(s.feasible for s in result.record.samples), [s.error for s in result.record.samples]


def test_a_ray_sample_past_its_time_out_is_infeasible(ray_executor):
    result = tune(parse_module(CHAIN), ["cpu"], INPUTS, budget=1, executor=ray_executor,
                  timeout=0.001)
    assert "ran for more than" in result.record.samples[0].error
