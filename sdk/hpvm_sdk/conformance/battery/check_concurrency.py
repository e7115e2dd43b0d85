"""Concurrency: independent nodes on the target (which the scheduler may run
at the same time) give right results; so do runs started from several
threads at once and overlapping asynchronous launches of one executable."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hpvm.interp import run_module

N = 257
THREADS = 4
RUNS_PER_THREAD = 3


def _pair(hpvm_target):
    module = hpvm_target.pair()
    exe = hpvm_target.compile(module)
    hpvm_target.require_placed(exe, "p", "q")
    return exe, module


def _vector(seed):
    return np.random.default_rng(seed).uniform(-1, 1, N).astype(np.float32)


def _check(hpvm_target, module, out, a):
    hpvm_target.assert_close(out, run_module(module, {"a": a}))


def test_independent_nodes_give_right_results(hpvm_target):
    exe, module = _pair(hpvm_target)
    a = _vector(0)
    _check(hpvm_target, module, exe(a=a), a)
    exe.close()


def test_calls_from_several_threads_give_right_results(hpvm_target):
    exe, module = _pair(hpvm_target)

    def runs(thread):
        for run in range(RUNS_PER_THREAD):
            a = _vector(thread * 100 + run)
            _check(hpvm_target, module, exe(a=a), a)
    with ThreadPoolExecutor(THREADS) as pool:
        for future in [pool.submit(runs, t) for t in range(THREADS)]:
            future.result(timeout=300)
    exe.close()


def test_overlapping_launches_give_right_results(hpvm_target):
    exe, module = _pair(hpvm_target)
    inputs = [_vector(seed) for seed in range(6)]
    launches = [exe.launch(a=a) for a in inputs]
    for launch, a in zip(launches, inputs):
        _check(hpvm_target, module, launch.wait(timeout=300), a)
    exe.close()
