"""The HPVM optimisations on the suite: each program with the target's
heuristic pipeline against the program as written, and an ablation in the
manner of HPVM2FPGA's Fig. 5: each optimisation alone, and all but one.

    python benchmarks/ablation_bench.py --target cpu [--programs edge,srad]
        [--size large] [--repeat 7]

Optimisations: NF node-fusion, SF stencil-fusion (its heuristic: cheap
recomputation only), LF loop-fusion, LU loop-unroll (factor 4),
AP argument-privatisation, PR parallel-reduce (the target's form: chunks
on cpu; on gpu_opencl strided chunks then a tree), TP task parallelism
(the runtime option; every other configuration runs with it off).
Times are whole calls on the cpu and the nodes' kernel times from
``exe.report()`` on a GPU (host copies excluded; nodes that overlap under
TP count twice there), medians of runs interleaved across configurations; every
result is checked against the untransformed program's.  Cells give the
speedup over the program as written; "-" where the optimisation has
nothing to act on (the same module as without it; 1.00x in the geomean).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROGRAMS = ("edge", "camera", "blur", "srad", "backprop", "cfd", "bfs", "sgemm")
PASSES = {"AP": "argument-privatisation", "LF": "loop-fusion", "SF": "stencil-fusion",
          "NF": "node-fusion", "LU": "loop-unroll{factor=4}"}
REDUCE = {"cpu": "parallel-reduce{form=chunks lanes=64 grain=4096}",
          "gpu_opencl": "parallel-reduce{form=chunks lanes=65536 layout=strided grain=256},"
                        "parallel-reduce"}
NAMES = ("NF", "SF", "LF", "LU", "AP", "PR", "TP")


def configuration(chosen: set[str], target: str) -> dict:
    """Compile options for the optimisations in ``chosen``."""
    steps = [PASSES[n] for n in ("AP", "LF", "SF", "NF") if n in chosen]
    if "PR" in chosen:
        steps.append(REDUCE[target])
    if "LU" in chosen:
        steps.append(PASSES["LU"])
    pipeline = ",".join(steps + ["dce"]) if steps else ""
    return {"pipeline": pipeline, "task_parallelism": "TP" in chosen}


def seconds(exe, inputs, target: str) -> float:
    """One run: wall time on the cpu (host memory: nothing is copied, and
    nodes running at once must not count twice); the nodes' kernel times
    on a GPU (host copies excluded)."""
    began = time.perf_counter()
    exe(**inputs)
    if target == "cpu":
        return time.perf_counter() - began
    return exe.report().node_seconds


def measure(bench, target: str, size: str, repeat: int) -> dict[str, float | None]:
    """Median kernel seconds per configuration label (None: same module as
    without the optimisation)."""
    import hpvm
    from hpvm.passes import run_pipeline
    inputs = bench.make_inputs(size, np.random.default_rng(0))
    configs = {"none": set(), "heuristic": None, "all": set(NAMES)}
    configs.update({f"only {n}": {n} for n in NAMES})
    configs.update({f"all but {n}": set(NAMES) - {n} for n in NAMES})
    exes, unchanged = {}, set()
    cleaned = run_pipeline(bench.build(), "dce")
    for label, chosen in configs.items():
        options = {"pipeline": "default"} if chosen is None else configuration(chosen, target)
        exes[label] = hpvm.compile(bench.build(), [target], options=options)
        if label.startswith("only ") and label != "only TP" and \
                run_pipeline(bench.build(), options["pipeline"]) == cleaned:
            unchanged.add(label)
    reference = exes["none"](**inputs)
    for label, exe in exes.items():
        got = exe(**inputs)
        for name, want in reference.items():
            np.testing.assert_allclose(got[name], want, rtol=max(bench.rtol, 1e-4),
                                       atol=max(bench.atol, 1e-5), err_msg=f"{bench.name} {label}")
    samples = {label: [] for label in exes}
    for _ in range(repeat):
        for label, exe in exes.items():
            samples[label].append(seconds(exe, inputs, target))
    return {label: None if label in unchanged else statistics.median(values)
            for label, values in samples.items()}


def table(title: str, rows: dict, labels: list[str]) -> None:
    print(f"\n### {title}\n")
    print("| program | as written ms | " + " | ".join(labels) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in labels) + " |")
    speedups: dict[str, list[float]] = {label: [] for label in labels}
    for name, times in rows.items():
        base = times["none"]
        cells = []
        for label in labels:
            value = times[label]
            speedups[label].append(1.0 if value is None else base / value)
            cells.append("-" if value is None else f"{base / value:.2f}x")
        print(f"| {name} | {base * 1e3:.3f} | " + " | ".join(cells) + " |")
    means = [f"**{math.exp(statistics.mean(math.log(v) for v in values)):.2f}x**" if values
             else "-" for values in speedups.values()]
    print("| **geomean** | | " + " | ".join(means) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cpu", choices=tuple(REDUCE))
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from benchmarks.suite import get
    print(f"command: {' '.join(shlex.quote(a) for a in sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    rows = {}
    for name in args.programs.split(","):
        rows[name] = measure(get(name), args.target, args.size, args.repeat)
        print(f"{name}: " + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in rows[name].items()
                                     if v is not None), flush=True)
    table(f"{args.target}: heuristic pipeline, all, each alone (speedup over as written)", rows,
          ["heuristic", "all"] + [f"only {n}" for n in NAMES])
    table(f"{args.target}: all but one (speedup over as written)", rows,
          [f"all but {n}" for n in NAMES])


if __name__ == "__main__":
    main()
