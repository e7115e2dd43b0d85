"""HPVM2FPGA's study on our suite, with fpga_aoc's model: each program tuned
by ``hpvm tune --mode estimate`` (nothing runs: every sample is the model's
estimate), the DSE-chosen design against the program as written, and the
ablation of the optimisations (HPVM2FPGA Fig. 5): each alone, and all but
one.

    python benchmarks/fpga_model_bench.py --budget 40 --size large
    python benchmarks/fpga_model_bench.py --budget 40 --ablation --programs ms_stencil2d,sgemm
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.tune_bench import geomean  # noqa: E402


GROUPS = {"LU": ("loop-unroll", "fpga_aoc.unroll_instances"), "LF": ("loop-fusion",),
          "NF": ("node-fusion",), "AP": ("argument-privatisation",),
          "IB": ("fpga_aoc.input_buffering",),
          "TP": ("task-parallelism",)}
"""HPVM2FPGA's optimisations and the parameters (by role, or knob) that are
theirs (IV is always on: sequentialize marks the instance loops)."""


def group_of(parameter) -> str:
    for group, roles in GROUPS.items():
        if parameter.role in roles or parameter.name.startswith(roles):
            return group
    return "other"


def tuned(bench, inputs, args) -> tuple[dict, object]:
    from hpvm.tune import TuneError, tune
    began = time.perf_counter()
    try:
        result = tune(bench.build(), ["fpga_aoc"], inputs, budget=args.budget, mode="estimate",
                      engine=args.engine, seed=args.seed)
    except TuneError as error:
        return {"speedup": 1.0, "note": str(error).split(" (fix")[0]}, None
    samples = result.record.samples
    baseline = result.baseline
    feasible = [s.objectives["seconds"] for s in samples if s.feasible]
    if not feasible:
        return {"speedup": 1.0, "note": "no feasible sample: " + samples[0].error}, None
    return {"speedup": result.speedup or 1.0,
            "baseline_ms": baseline.objectives["seconds"] * 1e3 if baseline and baseline.feasible
            else None,
            "best_ms": min(feasible) * 1e3,
            "errors": sorted({s.error for s in samples if not s.feasible})[:3],
            "samples": len(samples), "feasible": len(feasible),
            "tuning_seconds": time.perf_counter() - began, "summary": result.summary()}, result


def ablation(bench, inputs, result) -> dict[str, float]:
    """Estimated speedup over the program as written of the DSE's best
    design with each optimisation alone, and with all but one."""
    import tempfile
    from hpvm.interp.trip_profile import with_profiled_trip_counts
    from hpvm.ir.text import print_module
    from hpvm.tune.evaluate import SampleJob, evaluate_sample
    design, best = result.space, result.best.values
    defaults = design.defaults()
    module, _ = with_profiled_trip_counts(bench.build(), inputs)
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/inputs.npz"
        np.savez(path, **inputs)

        def seconds(values):
            job = SampleJob(print_module(module), ("fpga_aoc",), values, path, None, "estimate")
            outcome = evaluate_sample(job)
            return outcome.objectives["seconds"] if outcome.feasible else float("nan")

        base = seconds(defaults)
        row = {"all": base / seconds(best)}
        for group in GROUPS:
            names = [p.name for p in design if group_of(p) == group and p.name in best]
            if not names or all(best[n] == defaults[n] for n in names):
                continue
            alone = {**defaults, **{n: best[n] for n in names}}
            others = {**best, **{n: defaults[n] for n in names}}
            row[f"{group} alone"] = base / seconds(alone)
            row[f"all but {group}"] = base / seconds(others)
    return row


def main() -> None:
    from benchmarks.suite import all_benchmarks, get
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="")
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ablation", action="store_true", help="and the ablation per "
                        "optimisation of each program's best design")
    parser.add_argument("--json")
    args = parser.parse_args()
    benches = [get(n) for n in args.programs.split(",")] if args.programs else all_benchmarks()
    rows = []
    print(f"{'program':<16} {'as written ms':>14} {'DSE ms':>10} {'speedup':>8} "
              f"{'samples':>8} {'feasible':>9} {'tuning s':>9}", flush=True)
    for bench in benches:
        inputs = bench.make_inputs(args.size, np.random.default_rng(0))
        row, result = tuned(bench, inputs, args)
        row = {"program": bench.name, **row}
        if "note" in row:
            print(f"{bench.name:<16} {row['note']}", flush=True)
        else:
            print(f"{bench.name:<16} {row['baseline_ms'] or float('nan'):14.3f} "
                  f"{row['best_ms']:10.3f} {row['speedup']:8.2f} {row['samples']:8d} "
                  f"{row['feasible']:9d} {row['tuning_seconds']:9.1f}", flush=True)
            if args.ablation:
                row["ablation"] = ablation(bench, inputs, result)
                print("    " + "  ".join(f"{k} {v:.2f}x" for k, v in row["ablation"].items()),
                      flush=True)
        rows.append(row)
    print(f"geometric mean speedup: {geomean(r['speedup'] for r in rows):.2f}x over "
          f"{len(rows)} programs")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
