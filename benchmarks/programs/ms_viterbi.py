"""MachSuite viterbi/viterbi: the most likely hidden-state path of a hidden
Markov model for a sequence of observations, in -log probabilities (f64).

MachSuite (Reagen et al., IISWC 2014), kernel ``viterbi/viterbi``:

    llike[0, s] = init[s] + emission[s, obs[0]]
    llike[t, curr] = min over prev of
        llike[t-1, prev] + transition[prev, curr] + emission[curr, obs[t]]

then the path ends in the state of least ``llike[T-1, s]`` and is traced
back with ``path[t] = argmin_s llike[t, s] + transition[s, path[t+1]]``
(first minimum wins, strict ``<`` as in MachSuite).

Formulation: the time steps depend on each other and the node count of a
dataflow graph is fixed when the program is built, so the program is one
node, a parallel loop over a batch of B observation sequences decoded
with the same model, each instance running MachSuite's loops unchanged;
``llike`` is an intermediate buffer (B, T, S).  Deviation: MachSuite
decodes one sequence; the batch gives the parallelism.  Sizes: "small" 8
sequences of 20 steps over 16 states and 16 tokens; "large" 256 sequences
of MachSuite's own shape (140 steps, 64 states, 64 tokens).  Models are
random (rows of each probability table drawn uniformly and normalised).
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, buffer, f64, i32, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

SIZES = {"small": (8, 20, 16, 16), "large": (256, 140, 64, 64)}   # (B, T, states, tokens)


@hl.program
def ms_viterbi(obs: Buffer[i32, "B", "T"], init: Buffer[f64, "S"], transition: Buffer[f64, "S", "S"],
               emission: Buffer[f64, "S", "K"], path: Out[Buffer[i32, "B", "T"]]):
    llike = buffer(f64, ("B", "T", "S"))
    for b in parallel_loop(B, ins=(obs, init, transition, emission), outs=(llike, path), name="viterbi"):
        for s in range(S):
            llike[b, 0, s] = init[s] + emission[s, obs[b, 0]]
        for t in range(1, T):
            for curr in range(S):
                min_p = llike[b, t - 1, 0] + transition[0, curr] + emission[curr, obs[b, t]]
                for prev in range(1, S):
                    p = llike[b, t - 1, prev] + transition[prev, curr] + emission[curr, obs[b, t]]
                    if p < min_p:
                        min_p = p
                llike[b, t, curr] = min_p
        min_s = 0
        min_p = llike[b, T - 1, 0]
        for s in range(1, S):
            if llike[b, T - 1, s] < min_p:
                min_p = llike[b, T - 1, s]
                min_s = s
        path[b, T - 1] = i32(min_s)
        for t in range(T - 2, -1, -1):
            after = min_s
            min_s = 0
            min_p = llike[b, t, 0] + transition[0, after]
            for s in range(1, S):
                p = llike[b, t, s] + transition[s, after]
                if p < min_p:
                    min_p = p
                    min_s = s
            path[b, t] = i32(min_s)


def random_log_table(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """-log of a random row-stochastic rows x cols matrix."""
    weights = rng.uniform(0.01, 1.0, (rows, cols))
    return -np.log(weights / weights.sum(axis=1, keepdims=True))


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    sequences, steps, states, tokens = SIZES[size]
    return {"obs": rng.integers(0, tokens, (sequences, steps), dtype=np.int32),
            "init": random_log_table(1, states, rng)[0],
            "transition": random_log_table(states, states, rng),
            "emission": random_log_table(states, tokens, rng)}


def reference(inputs: dict) -> dict:
    """All sequences at once; the same f64 sums as MachSuite's, so equal
    values and the same first minima."""
    obs, transition, emission = inputs["obs"], inputs["transition"], inputs["emission"]
    sequences, steps = obs.shape
    llike = np.empty((sequences, steps, transition.shape[0]))
    llike[:, 0] = inputs["init"] + emission[:, obs[:, 0]].T
    for t in range(1, steps):
        candidates = llike[:, t - 1, :, None] + transition[None] + emission[:, obs[:, t]].T[:, None, :]
        llike[:, t] = candidates.min(axis=1)
    path = np.empty(obs.shape, dtype=np.int32)
    path[:, -1] = llike[:, -1].argmin(axis=1)
    for t in range(steps - 2, -1, -1):
        path[:, t] = (llike[:, t] + transition[:, path[:, t + 1]].T).argmin(axis=1)
    return {"path": path}


@numba.njit
def _first_minimum(values):
    best, best_at = values[0], 0
    for s in range(1, values.size):
        if values[s] < best:
            best, best_at = values[s], s
    return best_at


@numba.njit(parallel=True)
def _viterbi_numba(obs, init, transition, emission):
    sequences, steps = obs.shape
    states = init.size
    path = np.empty(obs.shape, dtype=np.int32)
    llike = np.empty((sequences, steps, states))
    for b in numba.prange(sequences):
        for s in range(states):
            llike[b, 0, s] = init[s] + emission[s, obs[b, 0]]
        for t in range(1, steps):
            for curr in range(states):
                min_p = llike[b, t - 1, 0] + transition[0, curr] + emission[curr, obs[b, t]]
                for prev in range(1, states):
                    min_p = min(min_p, llike[b, t - 1, prev] + transition[prev, curr]
                                + emission[curr, obs[b, t]])
                llike[b, t, curr] = min_p
        path[b, steps - 1] = _first_minimum(llike[b, steps - 1])
        for t in range(steps - 2, -1, -1):
            path[b, t] = _first_minimum(llike[b, t] + transition[:, path[b, t + 1]])
    return path


def _numba_run(inputs: dict) -> dict:
    return {"path": _viterbi_numba(inputs["obs"], inputs["init"], inputs["transition"],
                                   inputs["emission"])}


BENCHMARKS = [Benchmark(
    name="ms_viterbi", suite="machsuite", program=ms_viterbi, make_inputs=make_inputs,
    reference=reference, rtol=0, atol=0,   # state indices: exact (see reference)
    peers=(numba_peer(_numba_run),),
    description="Viterbi decoding (MachSuite's loops), one instance per observation sequence",
)]
