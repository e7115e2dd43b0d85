"""Rodinia BFS: level-synchronous breadth-first search over a CSR graph,
giving every node's cost (its level; -1 if unreachable) from one source.

Rodinia 3.1, ``bfs`` (after Harish & Narayanan, "Accelerating large graph
algorithms on the GPU using CUDA", HiPC 2007).  Rodinia runs two kernels
per level until no node changes:

- ``Kernel`` (here ``bfs_expand``): every node in the frontier (``mask``)
  leaves it and visits its edges; each unvisited neighbour gets
  ``cost = cost[node] + 1`` and is marked in ``updating``;
- ``Kernel2`` (``bfs_advance``): every updated node joins the frontier and
  is marked visited; ``updating`` is cleared.

Formulation: a dataflow graph has no data-dependent graph-level loop, so
the host's ``do { ... } while (over)`` becomes a fixed chain of LEVELS
(expand, advance) node pairs, unrolled by a program-level ``range`` loop.
Once the frontier is empty the remaining pairs change nothing (every node
tests its mask and stops), so the result equals Rodinia's whenever the
graph's depth from the source is below LEVELS; make_inputs checks that for
the graphs it builds.  The several writers of ``cost[id]`` / ``updating[id]``
in one level all write the same value, the benign race Rodinia relies on.
Masks are i8 (Rodinia's bool); the host-side initialisation (source in the
frontier, costs -1) is the node ``bfs_init``.

The numba peer is Rodinia's OpenMP version: the same two kernels as
parallel loops, with the host loop stopping once a level changes nothing
(so it runs depth + 1 levels where the program runs LEVELS).

Graphs follow Rodinia's graphgen: every node draws 2 to 4 random partners
and each pair is connected both ways (average degree about 6).
"""
import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, buffer, i8, i32, i64, parallel_loop

from benchmarks.peers import numba_peer
from benchmarks.suite import Benchmark

LEVELS = 16
NODES = {"small": 2_000, "large": 1_000_000}   # Rodinia's graph1MW_6 has 1M nodes


@hl.program
def bfs(starting: Buffer[i32, "N"], edge_count: Buffer[i32, "N"], edges: Buffer[i32, "E"],
        source: i64, cost: Out[Buffer[i32, "N"]]):
    mask = buffer(i8, ("N",))
    updating = buffer(i8, ("N",))
    visited = buffer(i8, ("N",))
    for tid in parallel_loop(N, outs=(mask, visited, cost), name="bfs_init"):
        cost[tid] = -1
        if tid == source:
            mask[tid] = 1
            visited[tid] = 1
            cost[tid] = 0
    for level in range(LEVELS):
        for tid in parallel_loop(N, ins=(starting, edge_count, edges, visited, mask, cost),
                                 outs=(mask, cost, updating), name="bfs_expand"):
            if mask[tid] != 0:
                mask[tid] = 0
                first = starting[tid]
                for edge in range(first, first + edge_count[tid]):
                    neighbour = edges[edge]
                    if visited[neighbour] == 0:
                        cost[neighbour] = cost[tid] + 1
                        updating[neighbour] = 1
        for tid in parallel_loop(N, ins=(updating,), outs=(mask, visited, updating),
                                 name="bfs_advance"):
            if updating[tid] != 0:
                mask[tid] = 1
                visited[tid] = 1
                updating[tid] = 0


def random_graph(nodes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rodinia graphgen's undirected random graph in CSR form:
    ``(starting, edge_count, edges)``, all i32."""
    degree = rng.integers(2, 5, size=nodes)
    sources = np.repeat(np.arange(nodes), degree)
    targets = rng.integers(0, nodes, size=sources.size)
    both_from = np.concatenate([sources, targets])
    both_to = np.concatenate([targets, sources])
    order = np.argsort(both_from, kind="stable")
    edge_count = np.bincount(both_from, minlength=nodes)
    starting = np.concatenate([[0], np.cumsum(edge_count)[:-1]])
    return (starting.astype(np.int32), edge_count.astype(np.int32),
            both_to[order].astype(np.int32))


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    starting, edge_count, edges = random_graph(NODES[size], rng)
    inputs = {"starting": starting, "edge_count": edge_count, "edges": edges, "source": 0}
    depth = reference(inputs)["cost"].max()
    if depth >= LEVELS:
        raise ValueError(f"bfs: the {size} graph is {depth} levels deep; the program "
                         f"unrolls {LEVELS} (raise LEVELS)")
    return inputs


def reference(inputs: dict) -> dict:
    """numpy: frontier-at-a-time BFS until the frontier is empty."""
    starting, edge_count, edges = inputs["starting"], inputs["edge_count"], inputs["edges"]
    cost = np.full(starting.size, -1, dtype=np.int32)
    frontier = np.array([inputs["source"]])
    cost[frontier] = 0
    level = 0
    while frontier.size:
        level += 1
        counts = edge_count[frontier]
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        neighbours = edges[np.repeat(starting[frontier], counts) + offsets]
        frontier = np.unique(neighbours[cost[neighbours] < 0])
        cost[frontier] = level
    return {"cost": cost}


@numba.njit(parallel=True)
def _bfs_numba(starting, edge_count, edges, source):
    """Rodinia's two kernels per level until no node is updated."""
    nodes = starting.size
    mask = np.zeros(nodes, np.int8)
    updating = np.zeros(nodes, np.int8)
    visited = np.zeros(nodes, np.int8)
    cost = np.full(nodes, -1, np.int32)
    mask[source] = visited[source] = 1
    cost[source] = 0
    changed = 1
    while changed:
        for tid in numba.prange(nodes):
            if mask[tid]:
                mask[tid] = 0
                for edge in range(starting[tid], starting[tid] + edge_count[tid]):
                    neighbour = edges[edge]
                    if not visited[neighbour]:
                        cost[neighbour] = cost[tid] + 1
                        updating[neighbour] = 1
        changed = 0
        for tid in numba.prange(nodes):
            if updating[tid]:
                mask[tid] = visited[tid] = 1
                updating[tid] = 0
                changed += 1
    return cost


def _run_numba(inputs: dict) -> dict:
    return {"cost": _bfs_numba(inputs["starting"], inputs["edge_count"], inputs["edges"],
                               inputs["source"])}


BENCHMARKS = [Benchmark(
    name="bfs", suite="rodinia", program=bfs, make_inputs=make_inputs, reference=reference,
    rtol=0, atol=0,   # integer costs: exact
    peers=(numba_peer(_run_numba),),
    description=f"breadth-first search, {LEVELS} levels of Rodinia's two kernels")]
