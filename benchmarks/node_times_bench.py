"""Each kernel's own time on gpu_opencl under several option sets: which
default helps or hurts which kernel of a program (issue 40).

    python benchmarks/node_times_bench.py --programs camera,backprop
        [--options '[{}, {"per_item_layout": "strided"}, {"per_item": 1}]']
        [--size large] [--repeat 10] [--pipeline PIPELINE]

Each program of the suite (benchmarks/suite.py) is compiled for
gpu_opencl once per option set (a JSON list of gpu_opencl options; ``{}``:
the defaults; a set's ``"pipeline"`` key: the pipeline it runs), as
written unless ``--pipeline`` or the set names a pipeline; its inputs are
made on the device once and its outputs left there.  A row is one kernel
(nodes of one function together), its own time from OpenCL profiling
events (``exe.report()``), the median of ``--repeat`` calls after two
warm-up calls; the last columns divide each option set's time by the
first's (below 1: faster than the first).
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def kernel_of(node: str) -> str:
    """The row a node's time goes to: its name without a repeat's suffix."""
    return re.sub(r"_\d+$", "", node)


def kernel_times(program, inputs: dict, options: dict, repeat: int
                 ) -> dict[str, tuple[float, int]]:
    """Kernel (kernel_of) -> (its nodes' own seconds in a call, the median of
    ``repeat`` calls with inputs and outputs on the device; how many nodes
    it is).  ``options``: hpvm.compile's (``pipeline`` included)."""
    import hpvm
    exe = hpvm.compile(program, ["gpu_opencl"], options)
    resident = {name: exe.device_array(value) if isinstance(value, np.ndarray) and value.ndim
                else value for name, value in inputs.items()}
    samples: dict[str, list[float]] = {}
    nodes: dict[str, int] = {}
    for run in range(repeat + 2):
        outputs = exe(**resident, outputs="device")
        next(iter(outputs.values())).queue.finish()
        if run < 2:
            continue  # the first calls build and warm up
        totals: dict[str, float] = {}
        for record in exe.report().node_records:
            kernel = kernel_of(record.node)
            totals[kernel] = totals.get(kernel, 0.0) + record.seconds
            if run == 2:  # the first measured call counts each kernel's nodes
                nodes[kernel] = nodes.get(kernel, 0) + 1
        for kernel, seconds in totals.items():
            samples.setdefault(kernel, []).append(seconds)
    return {kernel: (statistics.median(times), nodes[kernel])
            for kernel, times in samples.items()}


def compile_options(options: dict, pipeline: str) -> dict:
    """hpvm.compile's options for one option set: gpu_opencl's, and the
    set's own ``pipeline`` where it names one, else ``pipeline``."""
    own = {key: value for key, value in options.items() if key != "pipeline"}
    return {"gpu_opencl": own, "pipeline": options.get("pipeline", pipeline)}


def table(program: str, timings: list[dict[str, tuple[float, int]]]) -> list[str]:
    """Markdown rows of one program: a kernel a row (in the first option
    set's order), then the total; ms per option set, then each set's time
    over the first's."""
    kernels = list(dict.fromkeys(k for times in timings for k in times))
    rows = [(k, [times.get(k, (float("nan"), 0))[0] for times in timings]) for k in kernels]
    rows.append(("total", [sum(t for t, _ in times.values()) for times in timings]))
    lines = []
    for kernel, seconds in rows:
        ratios = [s / seconds[0] for s in seconds[1:]]
        lines.append(f"| {program} | {kernel} | " + " | ".join(f"{s * 1e3:.4f}" for s in seconds)
                     + "".join(f" | {r:.2f}" for r in ratios) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", required=True, help="comma-separated suite programs")
    parser.add_argument("--options", default="[{}]", help="a JSON list of gpu_opencl options")
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--pipeline", default="", help="a pipeline to run (default: none)")
    args = parser.parse_args(argv)
    option_sets = json.loads(args.options)
    if not isinstance(option_sets, list) or not option_sets \
            or not all(isinstance(o, dict) for o in option_sets):
        parser.error("--options: a JSON list of objects, e.g. '[{}, {\"per_item\": 1}]'")
    from benchmarks.suite import get
    print(f"command: python {shlex.join(sys.argv)}")
    names = [json.dumps(o, sort_keys=True) for o in option_sets]
    print("| program | kernel | " + " | ".join(f"ms {n}" for n in names)
          + "".join(f" | x {n}" for n in names[1:]) + " |")
    print("| --- | --- |" + " ---: |" * (2 * len(names) - 1))
    for name in args.programs.split(","):
        bench = get(name)
        inputs = bench.make_inputs(args.size, np.random.default_rng(0))
        timings = [kernel_times(bench.program, inputs, compile_options(options, args.pipeline),
                                args.repeat)
                   for options in option_sets]
        print("\n".join(table(name, timings)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
