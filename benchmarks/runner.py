"""Run the benchmark suite: every program on every usable target, and its
peers, in one run; check every result; time medians.

    from benchmarks.runner import run_suite
    result = run_suite(["blur", "edge"], targets=["cpu"], size="small", repeat=3)
    print(format_table(result.rows))

Per program: the inputs are made once (seeded).  Per target: the program is
compiled (untimed), ``exe(**inputs)`` runs once to warm up and its result is
checked against the numpy reference, then it runs ``repeat`` times; the
median is reported (``interleave``: every implementation of a program is
set up and checked first, then they run in turns, ``repeat`` rounds).  A wrong result is reported in the row ("wrong: ...")
and not timed.  Each peer that can run here is prepared (untimed), warmed
up, checked and timed the same way, once per program, and paired with
every target it is compared with: ratio = hpvm ms / peer ms (below 1:
hpvm is faster).  A target that cannot be used here is skipped once with
its reason; an unavailable peer is listed with its reason.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
from hpvm.cli.output import Progress

from .peers import numpy_peer, stand_in_for_missing_numba
from .suite import Benchmark, all_benchmarks

SEED = 0


@dataclass
class Timing:
    """One implementation's outcome: median ms, or why there is none."""
    ms: float | None = None
    status: str = "ok"          # "ok", "wrong: ...", "error: ..."


@dataclass
class Row:
    program: str
    suite: str
    target: str
    ms: float | None
    status: str
    placed: str = ""            # targets the nodes ran on, when not only ``target``
    peer: str = ""
    peer_ms: float | None = None
    peer_status: str = ""
    ratio: float | None = None  # hpvm ms / peer ms


@dataclass
class SuiteResult:
    rows: list[Row] = field(default_factory=list)
    skipped_targets: dict[str, str] = field(default_factory=dict)
    unavailable_peers: list[tuple[str, str, str]] = field(default_factory=list)
    """(program, peer, reason)."""

    def to_json(self) -> dict:
        return {"rows": [asdict(row) for row in self.rows],
                "skipped_targets": self.skipped_targets,
                "unavailable_peers": [{"program": p, "peer": n, "reason": r}
                                      for p, n, r in self.unavailable_peers]}


# --------------------------------------------------------------- selection
def select_benchmarks(names: list[str] | None) -> list[Benchmark]:
    """The named benchmarks (all when ``names`` is empty); ValueError naming
    the unknown ones and the known ones."""
    stand_in_for_missing_numba()
    benchmarks = all_benchmarks()
    if not names:
        return benchmarks
    known = {bench.name: bench for bench in benchmarks}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown program(s) {', '.join(unknown)}; "
                         f"the programs are: {', '.join(known)}")
    return [known[name] for name in names]


def target_registry(names: list[str]):
    """The plugin registry, with targets installed only as sources (a bare
    device machine: ``hpvm_<name>`` on PYTHONPATH) registered by hand."""
    from hpvm.registry import get_registry
    registry = get_registry()
    known = {info.name for info in registry.targets()}
    for name in names:
        if name in known:
            continue
        try:
            plugin = __import__(f"hpvm_{name}.plugin", fromlist=["plugin"])
        except ImportError:
            continue
        registry.register(plugin, name=name)
    return registry


def usable_targets(names: list[str], registry) -> tuple[list[str], dict[str, str]]:
    """(the targets usable here, {skipped target: reason})."""
    usable, skipped = [], {}
    for name in names:
        try:
            info = registry.target(name)
        except Exception as error:  # TargetError: unknown or refused plugin
            skipped[name] = str(error)
            continue
        if info.availability.available:
            usable.append(name)
        else:
            skipped[name] = info.availability.reason or "not available on this machine"
    return usable, skipped


# ------------------------------------------------------------------ timing
def check(bench: Benchmark, outputs: dict, expected: dict) -> str:
    """"ok", or "wrong: ..." saying which output differs and by how much."""
    from hpvm.testing import assert_outputs_close
    missing = [name for name in expected if name not in outputs]
    if missing:
        return f"wrong: outputs {', '.join(missing)} missing"
    try:
        assert_outputs_close({k: outputs[k] for k in expected}, expected, rtol=bench.rtol,
                             atol=bench.atol, label=bench.name)
    except AssertionError as error:
        return "wrong: " + " ".join(str(error).split())[:200]
    return "ok"


def measure(bench: Benchmark, make_run: Callable[[], Callable[[], dict]], expected: dict,
            repeat: int) -> Timing:
    """Set up (untimed), warm up and check, then the median of ``repeat`` runs."""
    return measure_together(bench, [make_run], expected, repeat)[0]


def measure_together(bench: Benchmark, make_runs: list, expected: dict, repeat: int) -> list[Timing]:
    """``measure`` for several implementations of one program, their timed
    runs interleaved (one run of each in turn, ``repeat`` rounds), so that
    a noisy machine's slow and fast spells fall on all of them alike.  Not
    for implementations with thread pools of their own (numba, Halide, the
    cpu target): one's idle workers still spin while the next one runs."""
    runs: list = []
    timings: list[Timing | None] = []
    for make_run in make_runs:
        try:
            run = make_run()
            status = check(bench, run(), expected)
        except Exception as error:  # a failing program must not stop the suite
            run, status = None, _error(error)
        runs.append(run if status == "ok" else None)
        timings.append(None if status == "ok" else Timing(None, status))
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for index, run in enumerate(runs):
            if run is None or timings[index] is not None:
                continue
            try:
                began = time.perf_counter()
                run()
                times[index].append(time.perf_counter() - began)
            except Exception as error:
                timings[index] = Timing(None, _error(error))
    return [timing or Timing(statistics.median(spent) * 1e3)
            for timing, spent in zip(timings, times)]


def _error(error: Exception) -> str:
    return f"error: {type(error).__name__}: {' '.join(str(error).split())[:200]}"


def compile_run(bench: Benchmark, target: str, inputs: dict, registry, placed: list,
                pipeline: str = ""):
    """make_run for the hpvm row: compile for ``target`` after the pass
    ``pipeline`` (if any; ``default`` is the target's own); ``placed`` gets
    the targets the placement chose (a node may fall back to cpu or
    interp)."""
    def make_run():
        import hpvm.runtime
        exe = hpvm.runtime.compile(bench.program, targets=[target], registry=registry,
                                   options={"pipeline": pipeline})
        placed.extend(exe.placement.used_targets)
        return lambda: exe(**inputs)
    return make_run


# ------------------------------------------------------------------- suite
def applies(peer, target: str) -> bool:
    return not peer.targets or target in peer.targets


def run_suite(programs: list[str] | None, targets: list[str], size: str = "small",
              repeat: int = 5, progress: bool = True, pipeline: str = "",
              interleave: bool = False) -> SuiteResult:
    """Run and check the named programs (all when None) on ``targets``,
    after the pass ``pipeline`` (e.g. ``"node-fusion,dce"``) when given;
    ``interleave`` times a program's implementations in turns
    (``measure_together``) instead of one after the other."""
    benchmarks = select_benchmarks(programs)
    registry = target_registry(targets)
    usable, skipped = usable_targets(targets, registry)
    result = SuiteResult(skipped_targets=skipped)
    peers = {bench.name: _available_peers(bench, usable, result) for bench in benchmarks}
    steps = sum(1 if interleave else len(usable) + len(peers[b.name]) for b in benchmarks)
    bar = Progress(steps) if progress else None
    for bench in benchmarks:
        inputs = bench.make_inputs(size, np.random.default_rng(SEED))
        expected = bench.reference(inputs)
        implementations = []   # (label, make_run, target or peer, placed: None for a peer)
        for target in usable:
            placed: list[str] = []
            implementations.append((f"{bench.name} on {target}", compile_run(
                bench, target, inputs, registry, placed, pipeline), target, placed))
        for peer in peers[bench.name]:
            implementations.append((f"{bench.name}: {peer.name}",
                                    lambda peer=peer: peer.prepare(inputs), peer, None))
        if interleave:
            if bar:
                bar.step(f"{bench.name}: every implementation, in turns")
            timings = measure_together(bench, [i[1] for i in implementations], expected, repeat)
        else:
            timings = []
            for label, make_run, *_ in implementations:
                if bar:
                    bar.step(label)
                timings.append(measure(bench, make_run, expected, repeat))
        hpvm_rows, peer_timings = [], []
        for (_, _, who, placed), timing in zip(implementations, timings):
            if placed is None:
                peer_timings.append((who, timing))
                continue
            others = "+".join(placed) if set(placed) - {who} else ""
            hpvm_rows.append(Row(bench.name, bench.suite, who, timing.ms, timing.status, others))
        result.rows.extend(pair_rows(hpvm_rows, peer_timings))
    if bar:
        bar.close()
    return result


def _available_peers(bench: Benchmark, usable: list[str], result: SuiteResult) -> list:
    """numpy and the program's peers that can run here and apply to a
    usable target; the others that cannot run are noted in ``result``."""
    available = []
    for peer in (numpy_peer(bench.reference), *bench.peers):
        reason = peer.available() if any(applies(peer, t) for t in usable) else "no target"
        if not reason:
            available.append(peer)
        elif reason != "no target":
            result.unavailable_peers.append((bench.name, peer.name, reason))
    return available


def pair_rows(hpvm_rows: list[Row], peer_timings: list) -> list[Row]:
    """One row per (target, peer compared with it); a target with no peer
    keeps its single row."""
    rows = []
    for row in hpvm_rows:
        paired = [(peer, timing) for peer, timing in peer_timings if applies(peer, row.target)]
        if not paired:
            rows.append(row)
        for peer, timing in paired:
            ratio = row.ms / timing.ms if row.ms and timing.ms else None
            rows.append(Row(**{**asdict(row), "peer": peer.name, "peer_ms": timing.ms,
                               "peer_status": timing.status, "ratio": ratio}))
    return rows


# ------------------------------------------------------------------ output
def _ms(value: float | None, status: str) -> str:
    return f"{value:.3f}" if value is not None else (status or "-")


def format_table(rows: list[Row]) -> str:
    """A Markdown table: program, target, median ms, peer, peer ms, ratio."""
    lines = ["| program | target | median ms | peer | peer ms | ratio (hpvm/peer) |",
             "| --- | --- | ---: | --- | ---: | ---: |"]
    for row in rows:
        target = row.target + (f" (ran on {row.placed})" if row.placed else "")
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else ""
        peer_ms = _ms(row.peer_ms, row.peer_status) if row.peer else ""
        lines.append(f"| {row.program} | {target} | {_ms(row.ms, row.status)} | {row.peer} | "
                     f"{peer_ms} | {ratio} |")
    return "\n".join(lines)


def format_notes(result: SuiteResult) -> str:
    """The skipped targets and unavailable peers, one line each."""
    lines = [f"target {name} skipped: {reason}" for name, reason in result.skipped_targets.items()]
    programs_by_reason: dict[tuple[str, str], list[str]] = {}
    for program, peer, reason in result.unavailable_peers:
        programs_by_reason.setdefault((peer, reason), []).append(program)
    lines += [f"peer {peer} unavailable ({', '.join(programs)}): {reason}"
              for (peer, reason), programs in programs_by_reason.items()]
    return "\n".join(lines)
