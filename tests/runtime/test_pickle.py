"""Executables pickle as their saved form, so they travel to process pools
and Ray workers: on every usable bundled target the copy computes what the
original does, in this process and in freshly spawned ones."""
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import hpvm
from hpvm.demo.edge_detection import edge_detect
from hpvm.testing import usable_targets

TARGETS = usable_targets(("interp", "cpu", "gpu_opencl", "fpga_aoc", "nvdla", "fixedfunc",
                          "aten", "movidius"))


def image(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"img": rng.random((24, 32), dtype=np.float32), "threshold": np.float32(0.3)}


@pytest.mark.parametrize("target", TARGETS)
def test_a_pickled_executable_computes_what_the_original_does(target):
    exe = hpvm.compile(edge_detect, targets=[target])
    copy = pickle.loads(pickle.dumps(exe))
    assert copy is not exe and copy.placement.targets == exe.placement.targets
    np.testing.assert_array_equal(copy(**image(0))["edges"], exe(**image(0))["edges"])


def test_a_tuned_configuration_travels_with_the_executable():
    exe = hpvm.compile(edge_detect, targets=["interp"])
    exe.config = {"format": "hpvm-tune-config/1", "values": {}}
    assert pickle.loads(pickle.dumps(exe)).config == exe.config


def test_a_process_pool_runs_the_executable_shipped_once_per_worker():
    """docs/scaling.md's recipe: the executable goes to each worker once
    (the pool's initializer), then batches go to the workers."""
    exe = hpvm.compile(edge_detect, targets=["cpu"] if "cpu" in TARGETS else ["interp"])
    batches = [image(seed) for seed in range(4)]
    spawn = multiprocessing.get_context("spawn")   # fresh processes: nothing inherited
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn, initializer=_keep,
                             initargs=(exe,)) as pool:
        results = list(pool.map(_run, batches))
    for batch, result in zip(batches, results):
        np.testing.assert_array_equal(result["edges"], exe(**batch)["edges"])


def test_ray_actors_run_the_executable_shipped_once_per_actor():
    """docs/scaling.md's recipe for Ray, on a local ray.init()."""
    ray = pytest.importorskip("ray")
    from ray.util import ActorPool

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    try:
        exe = hpvm.compile(edge_detect, targets=["cpu"] if "cpu" in TARGETS else ["interp"])
        runner = ray.remote(Runner)
        pool = ActorPool([runner.remote(exe) for _ in range(2)])
        batches = [image(seed) for seed in range(4)]
        results = list(pool.map(lambda actor, batch: actor.run.remote(batch), batches))
    finally:
        if started_here:
            ray.shutdown()
    for batch, result in zip(batches, results):
        np.testing.assert_array_equal(result["edges"], exe(**batch)["edges"])


_executable = None


def _keep(exe) -> None:
    global _executable
    _executable = exe


def _run(inputs):
    return _executable(**inputs)


class Runner:
    """A Ray actor holding one executable."""

    def __init__(self, exe):
        self.exe = exe

    def run(self, inputs):
        return self.exe(**inputs)
