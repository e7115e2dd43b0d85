"""HPVM2FPGA's study on our suite, with fpga_aoc's model: each program tuned
by ``hpvm tune --mode estimate`` (nothing runs: every sample is the model's
estimate), the DSE-chosen design against the program as written, and the
ablation of the optimisations (HPVM2FPGA Fig. 5): each alone, and all but
one.

    python benchmarks/fpga_model_bench.py --budget 40 --size large
    python benchmarks/fpga_model_bench.py --ablation --programs ms_stencil2d,ms_gemm,blur
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


def tuned(bench, inputs, passes, args) -> dict:
    from hpvm.tune import TuneError, tune
    began = time.perf_counter()
    try:
        result = tune(bench.build(), ["fpga_aoc"], inputs, budget=args.budget, passes=passes,
                      mode="estimate", engine=args.engine, seed=args.seed)
    except TuneError as error:
        return {"speedup": 1.0, "note": str(error).split(" (fix")[0]}
    samples = result.record.samples
    baseline = result.baseline
    feasible = [s.objectives["seconds"] for s in samples if s.feasible]
    if not feasible:
        return {"speedup": 1.0, "note": "no feasible sample: " + samples[0].error}
    return {"speedup": result.speedup or 1.0,
            "baseline_ms": baseline.objectives["seconds"] * 1e3 if baseline and baseline.feasible
            else None,
            "best_ms": min(feasible) * 1e3,
            "errors": sorted({s.error for s in samples if not s.feasible})[:3],
            "samples": len(samples), "feasible": sum(s.feasible for s in samples),
            "tuning_seconds": time.perf_counter() - began, "summary": result.summary()}


def main() -> None:
    from benchmarks.suite import all_benchmarks, get
    from hpvm.tune.space import PASS_PARAMETERS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="")
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    benches = [get(n) for n in args.programs.split(",")] if args.programs else all_benchmarks()
    rows = []
    if not args.ablation:
        print(f"{'program':<16} {'as written ms':>14} {'DSE ms':>10} {'speedup':>8} "
              f"{'samples':>8} {'feasible':>9} {'tuning s':>9}", flush=True)
    for bench in benches:
        inputs = bench.make_inputs(args.size, np.random.default_rng(0))
        if args.ablation:
            row = {"program": bench.name}
            row["all"] = tuned(bench, inputs, PASS_PARAMETERS, args)["speedup"]
            for name in PASS_PARAMETERS:
                row[f"only {name}"] = tuned(bench, inputs, (name,), args)["speedup"]
                row[f"all but {name}"] = tuned(bench, inputs, tuple(
                    p for p in PASS_PARAMETERS if p != name), args)["speedup"]
            print(bench.name, " ".join(f"{k}={v:.2f}" for k, v in row.items()
                                       if k != "program"), flush=True)
        else:
            row = {"program": bench.name, **tuned(bench, inputs, PASS_PARAMETERS, args)}
            if "note" in row:
                print(f"{bench.name:<16} {row['note']}", flush=True)
            else:
                print(f"{bench.name:<16} {row['baseline_ms'] or float('nan'):14.3f} "
                      f"{row['best_ms']:10.3f} {row['speedup']:8.2f} {row['samples']:8d} "
                      f"{row['feasible']:9d} {row['tuning_seconds']:9.1f}", flush=True)
        rows.append(row)
    keys = [k for k in rows[0] if k not in ("program", "note", "summary")] if args.ablation \
        else ["speedup"]
    for key in keys:
        if all(isinstance(r.get(key), (int, float)) for r in rows):
            print(f"geometric mean {key}: {geomean(r[key] for r in rows):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
