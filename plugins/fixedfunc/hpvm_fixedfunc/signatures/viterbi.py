"""The Viterbi decoder: the most likely hidden-state path of a hidden Markov
model, in -log probabilities (so likelihoods add and the best is the least).

Structure, two patterns that must both occur:

- add-compare-select over the trellis: in a loop over previous states,
  ``min(best, llike[prev] + transition[..] + emission[..])`` carried round
  the loop, the minimum stored into ``llike``;
- traceback: in a loop over states, ``p = llike[s] + transition[..]``,
  ``if p < best: best, best_state = p, s`` (first minimum wins), the best
  state stored into the path.

Binding: ``llike`` (the buffer the first pattern stores and loads),
``transition`` (the other buffer both patterns load), ``emission`` (the
load indexed by a load of the observations ``obs``), ``init`` (the other
float buffer read), ``path`` (stored by the traceback).  Conventions:
transition as [prev, curr] or [curr, prev], emission as [state, token] or
[token, state].  A rank-2 ``obs`` is a batch of sequences.
"""
from __future__ import annotations

import numpy as np

from hpvm.passes.pdg import ProgramDependenceGraph
from hpvm.passes.pdg_match import Pattern

from .base import Binding, Refusal, Signature, array_of, symbol_sizes


MIN_SUM = {"combine": "add", "pick": "min", "combined": "sum", "best": "least",
           "compare": "sum < best (first minimum wins)"}
MAX_PRODUCT = {"combine": "mul", "pick": "max", "combined": "product", "best": "greatest",
               "compare": "best < product (first maximum wins)"}
"""The two semirings a decoder is written in: -log probabilities that add,
the best the least; probabilities that multiply, the best the greatest."""


def add_compare_select(ring: dict = MIN_SUM) -> Pattern:
    p = Pattern(f"viterbi {ring['combine']}-compare-select")
    loop = p.loop("loop over the previous states")
    best = p.phi(loop, f"{ring['best']} likelihood carried round the loop over previous states")
    terms = [p.load(f"load of a likelihood term ({what})", role=f"term{n}")
             for n, what in enumerate(("previous step", "transition", "emission"))]
    total = p.op(ring["combine"], *terms, description=f"{ring['combined']} of three terms "
                 "(previous likelihood, transition, emission)")
    least = p.op(ring["pick"], total, best,
                 description=f"{ring['pick']}imum of the {ring['combined']} and the best so far")
    p.feed(least, best, "next")
    p.store(best, f"store of the {ring['best']} likelihood", role="store")
    return p


def traceback(ring: dict = MIN_SUM) -> Pattern:
    p = Pattern("viterbi traceback")
    loop = p.loop("traceback loop over the states")
    best = p.phi(loop, f"{ring['best']} likelihood carried round the traceback loop")
    best_state = p.phi(loop, "best state carried round the traceback loop", type_="i")
    terms = [p.load(f"load of a traceback term ({what})", role=f"term{n}")
             for n, what in enumerate(("likelihood", "transition"))]
    total = p.op(ring["combine"], *terms,
                 description=f"{ring['combined']} likelihood and transition in the traceback")
    better = p.op("lt", *((total, best) if ring["pick"] == "min" else (best, total)), type_="b",
                  description=f"comparison {ring['compare']}")
    p.feed(p.op(ring["pick"], total, best, description=f"new best likelihood "
                f"{ring['pick']}({ring['combined']}, best)"), best, "next")
    state = p.any("i", "the state index")
    choice = p.select(better, state, best_state,
                      f"selection of the state where the {ring['combined']} is better", type_="i")
    p.feed(choice, best_state, "next")
    p.store(best_state, "store of the best state into the path", role="store")
    return p


def pointer_select() -> Pattern:
    """The forward pass keeping back-pointers: the least of likelihood +
    transition over the previous states and the state it came from, the
    emission added after the loop, the state stored into a table."""
    p = Pattern("viterbi add-compare-select with back-pointers")
    loop = p.loop("loop over the previous states")
    best = p.phi(loop, "least likelihood carried round the loop over previous states")
    best_state = p.phi(loop, "best previous state carried round the loop", type_="i")
    terms = [p.load(f"load of a likelihood term ({what})", role=f"term{n}")
             for n, what in enumerate(("previous step", "transition"))]
    total = p.op("add", *terms, description="sum previous likelihood + transition")
    better = p.op("lt", total, best, type_="b", description="comparison sum < best (first "
                                                             "minimum wins)")
    p.feed(p.op("min", total, best, description="new best min(sum, best)"), best, "next")
    choice = p.select(better, p.any("i", "the previous state index"), best_state,
                      "selection of the state where the sum is less", type_="i")
    p.feed(choice, best_state, "next")
    emission = p.load("load of the emission", role="emission")
    p.store(p.op("add", best, emission, description="least likelihood + emission"),
            "store of the least likelihood plus the emission", role="store")
    p.store(best_state, "store of the best previous state (a back-pointer)", role="pointer")
    return p


def pointer_traceback() -> Pattern:
    """The path read back through the pointers: a state carried round a
    loop, each next one the pointer the current one indexes."""
    p = Pattern("viterbi traceback through back-pointers")
    loop = p.loop("traceback loop over the steps")
    state = p.phi(loop, "state carried back through the pointers", type_="i")
    pointer = p.load("load of the back-pointer of the current state", role="pointer",
                     type_="i")
    p.feed(state, pointer, None)
    p.feed(pointer, state, "next")
    p.store(pointer, "store of the state a pointer gives into the path", role="store")
    return p


def relaxation() -> Pattern:
    """The forward pass over a list of transitions (a sparse model): for
    each edge, previous likelihood + edge cost + emission, stored into the
    edge's head state where it is less than what is there."""
    p = Pattern("viterbi relaxation over the edges")
    loop = p.loop("loop over the edges")
    terms = [p.load(f"load of a likelihood term ({what})", role=f"term{n}")
             for n, what in enumerate(("previous step", "edge cost", "emission"))]
    total = p.op("add", *terms, description="sum of three terms (previous likelihood, edge "
                                              "cost, emission)")
    current = p.load("load of the likelihood the sum may improve", role="current")
    better = p.op("lt", total, current, type_="b", description="comparison sum < the likelihood "
                                                                "there")
    branch = p.branch(better, "if on the sum being less")
    p.guard(loop, branch, "body")
    p.guard(branch, p.store(total, "store of the sum where it is less", role="store"), "then")
    return p


def edge_traceback() -> Pattern:
    """The traceback over a list of transitions: among the edges into the
    current state, the first whose tail gives the least likelihood + cost."""
    p = Pattern("viterbi traceback over the edges")
    loop = p.loop("traceback loop over the edges")
    best = p.phi(loop, "least likelihood carried round the loop over the edges")
    best_state = p.phi(loop, "best state carried round the loop over the edges", type_="i")
    head = p.load("load of an edge's head state", role="head", type_="i")
    into = p.op("eq", head, p.any("i", "the current state"), type_="b",
                description="comparison edge head == current state")
    terms = [p.load(f"load of a traceback term ({what})", role=f"term{n}")
             for n, what in enumerate(("likelihood", "edge cost"))]
    total = p.op("add", *terms, description="sum likelihood + edge cost in the traceback")
    better = p.op("lt", total, best, type_="b", description="comparison sum < best (first "
                                                             "minimum wins)")
    least = p.op("min", total, best, description="new best min(sum, best)")
    p.feed(p.select(into, least, best, "the new best where the edge leads into the state"),
           best, "next")
    tail = p.load("load of the edge's tail state", role="tail", type_="i")
    choice = p.select(better, tail, best_state, "selection of the tail where the sum is less",
                      type_="i")
    p.feed(p.select(into, choice, best_state, "the tail where the edge leads into the state",
                    type_="i"), best_state, "next")
    p.store(best_state, "store of the best state into the path", role="store")
    return p


class Viterbi(Signature):
    def __init__(self):
        super().__init__(name="viterbi", description="Viterbi decoder (min-sum over -log "
                                                      "probabilities, or max-product)",
                         pattern_sets=[("add-compare-select and traceback",
                                        [add_compare_select(), traceback()]),
                                       ("max-product and traceback",
                                        [add_compare_select(MAX_PRODUCT), traceback(MAX_PRODUCT)]),
                                       ("add-compare-select with back-pointers",
                                        [pointer_select(), pointer_traceback()]),
                                       ("relaxation over a list of transitions",
                                        [relaxation(), edge_traceback()])])

    def bind(self, pdg: ProgramDependenceGraph, occurrences, types) -> Binding:
        acs, back = occurrences
        if "current" in acs:
            return _bind_edges(pdg, acs, back)
        llike = array_of(pdg, acs["store"])
        terms = [acs[role] for role in ("term0", "term1", "term2", "emission") if role in acs]
        arrays = [array_of(pdg, term) for term in terms]
        if llike not in arrays:
            raise Refusal(f"the add-compare-select stores into '{llike}' but reads no earlier "
                          "likelihood from it")
        emission = [term for term in terms if _indexed_by_a_load(pdg, term)]
        if len(emission) != 1:
            raise Refusal("no single emission term indexed by the observations")
        emission_array = array_of(pdg, emission[0])
        obs = [pdg.facts(i)["array"] for i in pdg.facts(emission[0])["indices"] if pdg.label(i) == "load"]
        rest = [a for a in arrays if a not in (llike, emission_array)]
        if len(rest) != 1:
            raise Refusal("the three terms are not likelihood, transition and emission from three buffers")
        transition = rest[0]
        if "pointer" in acs:
            pointers = array_of(pdg, acs["pointer"])
            if array_of(pdg, back["pointer"]) != pointers:
                raise Refusal(f"the traceback reads its pointers from "
                              f"'{array_of(pdg, back['pointer'])}', not from '{pointers}', where "
                              "the forward pass keeps them")
        else:
            back_arrays = {array_of(pdg, back[f"term{n}"]) for n in range(2)}
            if back_arrays != {llike, transition}:
                raise Refusal(f"the traceback reads {sorted(back_arrays)}, not the likelihoods "
                              f"'{llike}' and the transitions '{transition}'")
        params = {p.name: p for p in pdg.function.params}
        init = [name for name, p in params.items() if p.is_buffer and p.reads and p.type.element.is_float
                and name not in (llike, transition, emission_array)]
        if len(init) != 1:
            raise Refusal(f"expected one initial-likelihood buffer besides the tables, found {init}")
        path = array_of(pdg, back["store"])
        reads = {"obs": obs[0], "init": init[0], "transition": transition, "emission": emission_array}
        writes = {"path": path}
        if llike in params:
            writes["llike"] = llike
        if "pointer" in acs and pointers in params:
            writes["pointers"] = pointers
        missing = [name for name in [*reads.values(), *writes.values()] if name not in params]
        if missing:
            raise Refusal(f"{missing} are not parameters of the kernel")
        return Binding(reads, writes)

    def conventions(self, binding, types) -> list[dict]:
        if "edge_cost" in binding.reads:
            return [{"transition": "edges", "emission": e, "semiring": "min-sum"}
                    for e in ("state,token", "token,state")]
        return [{"transition": t, "emission": e, "semiring": ring}
                for ring in SEMIRINGS for t in ("prev,curr", "curr,prev")
                for e in ("state,token", "token,state")]

    def probe_inputs(self, binding, types, rng, scale, limits):
        steps, states, tokens = ((6, 4, 5), (12, 7, 9))[scale]
        obs_type = types[binding.reads["obs"]]
        batch = (2,) if obs_type.rank == 2 else ()
        roles = dict(binding.reads) | {f"out_{r}": n for r, n in binding.writes.items()}
        wanted = {"obs": (*batch, steps), "init": (states,), "emission": (states, tokens),
                  "out_path": (*batch, steps)}
        edges = _probe_edges(states, rng) if "edge_cost" in roles else None
        if edges is None:
            wanted["transition"] = (states, states)
        else:
            wanted.update({role: (len(edges[0]),) for role in EDGE_ROLES})
        for table in ("out_llike", "out_pointers"):
            if table in roles:
                wanted[table] = (*batch, steps, states)
        shapes = symbol_sizes({role: types[roles[role]] for role in wanted}, wanted)
        tokens = min(shapes["emission"])
        inputs = {"obs": rng.integers(0, tokens, shapes["obs"]).astype(
                      types[binding.reads["obs"]].element.numpy_dtype),
                  "init": _log_table(1, shapes["init"][0], rng)[0],
                  "emission": _log_table(*shapes["emission"], rng)}
        if edges is None:
            inputs["transition"] = _log_table(*shapes["transition"], rng)
        else:
            inputs.update(zip(EDGE_ROLES, edges))
        return inputs

    def run(self, convention, inputs, backend):
        xp = backend
        obs, init = inputs["obs"], inputs["init"]
        edges = convention["transition"] == "edges"
        transition = xp.dense_transitions(*(inputs[role] for role in EDGE_ROLES),
                                          init.shape[0]) if edges else inputs["transition"]
        if convention["transition"] == "curr,prev":
            transition = transition.T
        emission = inputs["emission"]
        if convention["emission"] == "token,state":
            emission = emission.T
        batched = obs.ndim == 2
        obs = obs if batched else obs[None]
        llike, path, pointers = xp.viterbi(obs, init, transition, emission,
                                           maximum=convention["semiring"] == "max-product")
        if edges:  # ties go to the first edge, not the lowest state
            path = xp.edge_path(llike, inputs["edge_from"], inputs["edge_to"], inputs["edge_cost"])
        if not batched:
            llike, path, pointers = llike[0], path[0], pointers[0]
        return {"llike": llike, "path": path, "pointers": pointers}


SEMIRINGS = ("min-sum", "max-product")
EDGE_ROLES = ("edge_from", "edge_to", "edge_cost")
"""A list of transitions: tail state, head state, cost."""


def _bind_edges(pdg: ProgramDependenceGraph, relax: dict, back: dict) -> Binding:
    """The roles of a decoder over a list of transitions: the likelihood
    table the relaxation stores, the previous likelihood read at an edge's
    tail, the cost read per edge, the emission read at the edge's head,
    and a traceback reading the same tables."""
    llike = array_of(pdg, relax["store"])
    if array_of(pdg, relax["current"]) != llike:
        raise Refusal(f"the relaxation compares with '{array_of(pdg, relax['current'])}', not "
                      f"with the likelihoods it stores into ('{llike}')")
    terms = [relax[f"term{n}"] for n in range(3)]
    previous = [t for t in terms if array_of(pdg, t) == llike]
    emission = [t for t in terms if t not in previous and _indexed_by_a_load(pdg, t)]
    cost = [t for t in terms if t not in previous and t not in emission]
    if len(previous) != 1 or len(emission) != 1 or len(cost) != 1:
        raise Refusal("the three terms are not previous likelihood, edge cost and emission")
    tails = _index_arrays(pdg, previous[0])
    heads = _index_arrays(pdg, relax["store"])
    obs = [a for a in _index_arrays(pdg, emission[0]) if a not in heads]
    if len(tails) != 1 or len(heads) != 1 or len(obs) != 1:
        raise Refusal("the edges' tail and head states, or the observations, are not single "
                      "index tables")
    tail, head, cost_array = tails[0], heads[0], array_of(pdg, cost[0])
    if (array_of(pdg, back["head"]), array_of(pdg, back["tail"])) != (head, tail) or \
            {array_of(pdg, back[f"term{n}"]) for n in range(2)} != {llike, cost_array}:
        raise Refusal("the traceback does not read the relaxation's edges and likelihoods")
    params = {p.name: p for p in pdg.function.params}
    taken = {llike, cost_array, array_of(pdg, emission[0])}
    init = [name for name, p in params.items() if p.is_buffer and p.reads
            and p.type.element.is_float and name not in taken]
    if len(init) != 1:
        raise Refusal(f"expected one initial-likelihood buffer besides the tables, found {init}")
    reads = {"obs": obs[0], "init": init[0], "edge_from": tail, "edge_to": head,
             "edge_cost": cost_array, "emission": array_of(pdg, emission[0])}
    writes = {"path": array_of(pdg, back["store"])}
    if llike in params:
        writes["llike"] = llike
    missing = [name for name in [*reads.values(), *writes.values()] if name not in params]
    if missing:
        raise Refusal(f"{missing} are not parameters of the kernel")
    return Binding(reads, writes)


def _index_arrays(pdg: ProgramDependenceGraph, access: int) -> list[str]:
    """The buffers whose loads index the load or store ``access``."""
    return [pdg.facts(i)["array"] for i in pdg.facts(access)["indices"] if pdg.label(i) == "load"]


def _probe_edges(states: int, rng: np.random.Generator):
    """A list of transitions for a probe: every pair of states but a few,
    in a shuffled order, with -log costs."""
    pairs = [(a, b) for a in range(states) for b in range(states)]
    keep = sorted(rng.permutation(len(pairs))[:len(pairs) - states // 2])
    order = rng.permutation(len(keep))
    tails = np.array([pairs[keep[i]][0] for i in order])
    heads = np.array([pairs[keep[i]][1] for i in order])
    return tails, heads, -np.log(rng.uniform(0.05, 1.0, len(order)))


def _indexed_by_a_load(pdg: ProgramDependenceGraph, load: int) -> bool:
    return any(pdg.label(i) == "load" for i in pdg.facts(load)["indices"])


def _log_table(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    weights = rng.uniform(0.01, 1.0, (rows, cols))
    return -np.log(weights / weights.sum(axis=1, keepdims=True))
