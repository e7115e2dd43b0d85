"""Viterbi decoders written the way people write them, each in its own
style, with a numpy reference and a near miss that must be refused.

Styles covered: min-sum over -log probabilities and max-product over
probabilities; the path recovered by recomputing the best predecessor
or from a table of back-pointers kept in the forward pass; one sequence
or a batch; transitions as [prev, curr] or [curr, prev]; emissions as
[state, token] or [token, state]; for and while loops; the minimum by
``min`` or by an ``if``."""
from __future__ import annotations

import math

import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f64, i32, i64, parallel_loop


@hl.program
def if_update_single(tokens: Buffer[i64, "T"], prior: Buffer[f64, "S"],
                     trans: Buffer[f64, "S", "S"], emit: Buffer[f64, "S", "K"],
                     score: Out[Buffer[f64, "T", "S"]], path: Out[Buffer[i64, "T"]]):
    """One sequence; the minimum kept by an if; the path recovered by
    recomputing each step's best predecessor, walking back with a while."""
    for _ in parallel_loop(1, ins=(tokens, prior, trans, emit), outs=(score, path), name="viterbi"):
        for s in range(S):
            score[0, s] = prior[s] + emit[s, tokens[0]]
        for t in range(1, T):
            for s in range(S):
                best = math.inf
                for r in range(S):
                    cand = score[t - 1, r] + trans[r, s] + emit[s, tokens[t]]
                    if cand < best:
                        best = cand
                score[t, s] = best
        state = 0
        least = score[T - 1, 0]
        for s in range(1, S):
            if score[T - 1, s] < least:
                least = score[T - 1, s]
                state = s
        path[T - 1] = state
        t = T - 1
        while t >= 1:
            pick = 0
            low = math.inf
            for r in range(S):
                via = score[t - 1, r] + trans[r, state]
                if via < low:
                    low = via
                    pick = r
            path[t - 1] = pick
            state = pick
            t = t - 1


@hl.program
def batched_transposed(seqs: Buffer[i32, "B", "T"], start: Buffer[f64, "S"],
                       to_from: Buffer[f64, "S", "S"], token_state: Buffer[f64, "K", "S"],
                       trellis: Out[Buffer[f64, "B", "T", "S"]], best: Out[Buffer[i32, "B", "T"]]):
    """A batch, one instance per sequence; transitions as [curr, prev],
    emissions as [token, state]; min(); a backward for loop."""
    for b in parallel_loop(B, ins=(seqs, start, to_from, token_state), outs=(trellis, best),
                           name="decode"):
        for s in range(S):
            trellis[b, 0, s] = token_state[seqs[b, 0], s] + start[s]
        for t in range(1, T):
            for cur in range(S):
                acc = math.inf
                for prv in range(S):
                    acc = min(acc, token_state[seqs[b, t], cur] + to_from[cur, prv]
                              + trellis[b, t - 1, prv])
                trellis[b, t, cur] = acc
        last = 0
        for s in range(1, S):
            if trellis[b, T - 1, s] < trellis[b, T - 1, last]:
                last = s
        best[b, T - 1] = i32(last)
        for t in range(T - 1, 0, -1):
            choice = 0
            lowest = math.inf
            for prv in range(S):
                value = trellis[b, t - 1, prv] + to_from[last, prv]
                if value < lowest:
                    lowest = value
                    choice = prv
            best[b, t - 1] = i32(choice)
            last = choice


@hl.program
def backpointers(obs: Buffer[i64, "T"], pi: Buffer[f64, "S"], a: Buffer[f64, "S", "S"],
                 b: Buffer[f64, "S", "K"], delta: Out[Buffer[f64, "T", "S"]],
                 psi: Out[Buffer[i64, "T", "S"]], q: Out[Buffer[i64, "T"]]):
    """Rabiner's notation: delta and the back-pointer table psi filled in the
    forward pass (the emission added after the best predecessor is
    found), the path read back through psi."""
    for _ in parallel_loop(1, ins=(obs, pi, a, b), outs=(delta, psi, q), name="viterbi"):
        for i in range(S):
            delta[0, i] = pi[i] + b[i, obs[0]]
        for t in range(1, T):
            for j in range(S):
                best = math.inf
                arg = 0
                for i in range(S):
                    d = delta[t - 1, i] + a[i, j]
                    if d < best:
                        best = d
                        arg = i
                delta[t, j] = best + b[j, obs[t]]
                psi[t, j] = arg
        last = 0
        for i in range(1, S):
            if delta[T - 1, i] < delta[T - 1, last]:
                last = i
        q[T - 1] = last
        for t in range(T - 1, 0, -1):
            last = psi[t, last]
            q[t - 1] = last


@hl.program
def max_product(x: Buffer[i64, "N", "T"], p0: Buffer[f64, "S"], pt: Buffer[f64, "S", "S"],
                pe: Buffer[f64, "S", "K"], prob: Out[Buffer[f64, "N", "T", "S"]],
                states: Out[Buffer[i64, "N", "T"]]):
    """Probabilities, not their logarithms: products and maxima; a batch of
    sequences; the path by recomputing the best predecessor."""
    for n in parallel_loop(N, ins=(x, p0, pt, pe), outs=(prob, states), name="decode"):
        for s in range(S):
            prob[n, 0, s] = p0[s] * pe[s, x[n, 0]]
        for t in range(1, T):
            for s in range(S):
                top = 0.0
                for r in range(S):
                    top = max(top, prob[n, t - 1, r] * pt[r, s] * pe[s, x[n, t]])
                prob[n, t, s] = top
        cur = 0
        for s in range(1, S):
            if prob[n, T - 1, s] > prob[n, T - 1, cur]:
                cur = s
        states[n, T - 1] = cur
        t = T - 1
        while t > 0:
            arg = 0
            most = 0.0
            for r in range(S):
                via = prob[n, t - 1, r] * pt[r, cur]
                if via > most:
                    most = via
                    arg = r
            states[n, t - 1] = arg
            cur = arg
            t = t - 1


@hl.program
def edge_list(obs: Buffer[i64, "T"], init: Buffer[f64, "S"], src: Buffer[i64, "E"],
              dst: Buffer[i64, "E"], cost: Buffer[f64, "E"], emit: Buffer[f64, "S", "K"],
              score: Out[Buffer[f64, "T", "S"]], path: Out[Buffer[i64, "T"]]):
    """A sparse model: the transitions as a list of edges (tail, head,
    cost); each step relaxes every edge into its head state; the traceback
    looks among the edges into the current state."""
    for _ in parallel_loop(1, ins=(obs, init, src, dst, cost, emit), outs=(score, path),
                           name="sparse"):
        for s in range(S):
            score[0, s] = init[s] + emit[s, obs[0]]
        for t in range(1, T):
            for s in range(S):
                score[t, s] = math.inf
            for e in range(E):
                cand = score[t - 1, src[e]] + cost[e] + emit[dst[e], obs[t]]
                if cand < score[t, dst[e]]:
                    score[t, dst[e]] = cand
        state = 0
        for s in range(1, S):
            if score[T - 1, s] < score[T - 1, state]:
                state = s
        path[T - 1] = state
        for t in range(T - 1, 0, -1):
            best = math.inf
            pick = 0
            for e in range(E):
                if dst[e] == state:
                    via = score[t - 1, src[e]] + cost[e]
                    if via < best:
                        best = via
                        pick = src[e]
            path[t - 1] = pick
            state = pick


def log_table(rng, rows, cols):
    weights = rng.uniform(0.05, 1.0, (rows, cols))
    return -np.log(weights / weights.sum(axis=1, keepdims=True))


def min_sum(obs, init, trans, emit):
    """(scores [.., T, S], path [.., T]): trans as [prev, curr], emit as
    [state, token]; first minima."""
    obs = np.atleast_2d(obs)
    score = np.empty(obs.shape + (init.size,))
    score[:, 0] = init + emit[:, obs[:, 0]].T
    for t in range(1, obs.shape[1]):
        score[:, t] = (score[:, t - 1, :, None] + trans[None]).min(axis=1) + emit[:, obs[:, t]].T
    path = np.empty(obs.shape, np.int64)
    path[:, -1] = score[:, -1].argmin(axis=1)
    for t in range(obs.shape[1] - 2, -1, -1):
        path[:, t] = (score[:, t] + trans[:, path[:, t + 1]].T).argmin(axis=1)
    return score, path


def make_single(rng, steps=10, states=5, tokens=6):
    return {"tokens": rng.integers(0, tokens, steps), "prior": log_table(rng, 1, states)[0],
            "trans": log_table(rng, states, states), "emit": log_table(rng, states, tokens)}


def ref_single(inputs):
    score, path = min_sum(inputs["tokens"], inputs["prior"], inputs["trans"], inputs["emit"])
    return {"score": score[0], "path": path[0]}


def make_batched(rng, sequences=3, steps=8, states=4, tokens=5):
    return {"seqs": rng.integers(0, tokens, (sequences, steps)).astype(np.int32),
            "start": log_table(rng, 1, states)[0], "to_from": log_table(rng, states, states).T.copy(),
            "token_state": log_table(rng, states, tokens).T.copy()}


def ref_batched(inputs):
    score, path = min_sum(inputs["seqs"], inputs["start"], inputs["to_from"].T,
                          inputs["token_state"].T)
    return {"trellis": score, "best": path.astype(np.int32)}


def make_pointers(rng, steps=9, states=4, tokens=5):
    return {"obs": rng.integers(0, tokens, steps), "pi": log_table(rng, 1, states)[0],
            "a": log_table(rng, states, states), "b": log_table(rng, states, tokens)}


def ref_pointers(inputs):
    score, path = min_sum(inputs["obs"], inputs["pi"], inputs["a"], inputs["b"])
    candidates = score[0, :-1, :, None] + inputs["a"][None]
    psi = np.zeros(score.shape[1:], np.int64)
    psi[1:] = candidates.argmin(axis=1)
    return {"delta": score[0], "psi": psi, "q": path[0]}


def make_max_product(rng, sequences=2, steps=7, states=4, tokens=5):
    return {"x": rng.integers(0, tokens, (sequences, steps)),
            "p0": np.exp(-log_table(rng, 1, states)[0]), "pt": np.exp(-log_table(rng, states, states)),
            "pe": np.exp(-log_table(rng, states, tokens))}


def ref_max_product(inputs):
    x, p0, pt, pe = inputs["x"], inputs["p0"], inputs["pt"], inputs["pe"]
    prob = np.empty(x.shape + (p0.size,))
    prob[:, 0] = p0 * pe[:, x[:, 0]].T
    for t in range(1, x.shape[1]):
        prob[:, t] = (prob[:, t - 1, :, None] * pt[None]).max(axis=1) * pe[:, x[:, t]].T
    states = np.empty(x.shape, np.int64)
    states[:, -1] = prob[:, -1].argmax(axis=1)
    for t in range(x.shape[1] - 2, -1, -1):
        states[:, t] = (prob[:, t] * pt[:, states[:, t + 1]].T).argmax(axis=1)
    return {"prob": prob, "states": states}


def make_edges(rng, steps=9, states=5, tokens=6):
    pairs = [(a, b) for a in range(states) for b in range(states) if (a + 2 * b) % 4]
    order = rng.permutation(len(pairs))
    return {"obs": rng.integers(0, tokens, steps), "init": log_table(rng, 1, states)[0],
            "src": np.array([pairs[i][0] for i in order]), "dst": np.array([pairs[i][1] for i in order]),
            "cost": -np.log(rng.uniform(0.05, 1.0, len(pairs))), "emit": log_table(rng, states, tokens)}


def ref_edges(inputs):
    """The sparse model through a dense one: missing transitions cost +inf."""
    states = inputs["init"].size
    dense = np.full((states, states), np.inf)
    dense[inputs["src"], inputs["dst"]] = inputs["cost"]
    score, path = min_sum(inputs["obs"], inputs["init"], dense, inputs["emit"])
    return {"score": score[0], "path": path[0]}


PROBE = "structure matched, but on a probe"

VARIANTS = [
    {"name": "if_update_single", "program": if_update_single, "make": make_single,
     "reference": ref_single,
     "mutant": ("emit[s_1, tokens[t]]", "emit[s_1, tokens[t - 1]]",
                "the emission of the previous step", PROBE)},
    {"name": "batched_transposed", "program": batched_transposed, "make": make_batched,
     "reference": ref_batched,
     "mutant": ("if value < lowest {", "if value <= lowest {",
                "a traceback keeping the last minimum", "no comparison sum < best")},
    {"name": "backpointers", "program": backpointers, "make": make_pointers,
     "reference": ref_pointers,
     "mutant": ("last = psi[t_1, last]", "last = psi[t_1 - 1, last]",
                "the pointer of the step before", PROBE)},
    {"name": "max_product", "program": max_product, "make": make_max_product,
     "reference": ref_max_product,
     "mutant": ("pt[r, s_1] * pe[s_1", "pt[s_1, r] * pe[s_1",
                "the transition read the wrong way round in one place", PROBE)},
    {"name": "edge_list", "program": edge_list, "make": make_edges, "reference": ref_edges,
     "mutant": ("pick = src[e_1]", "pick = dst[e_1]", "the head taken for the tail",
                "no load of the edge's tail state")},
]
