"""The runtime's Python cost per node: small programs, where kernels take
microseconds, timed as whole ``exe(**inputs)`` calls against the sum of
their node kernel times (``exe.report()``).

    .venv/bin/python benchmarks/runtime_overhead_bench.py [--repeat 200]
        [--targets interp,cpu,aten] [--programs edge,blur,lenet1,lenet64]

Programs: edge and blur at size "small" (benchmarks/programs/), and the
LeNet of benchmarks/onnx_bench.py at batch 1 and 64.  Each executable runs
once to warm up (JIT loading is not timed), then ``--repeat`` times; the
table gives medians.  overhead/node = (call - kernels) / nodes.  A target
that does not take a node leaves it to the fallback (cpu, then interp):
the "placed" column says where the nodes ran.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections import Counter

import numpy as np

PROGRAMS = ("edge", "blur", "lenet1", "lenet64")


def program_inputs(name: str):
    """(module, inputs) of one program."""
    if name in ("edge", "blur"):
        import importlib
        bench = importlib.import_module(f"benchmarks.programs.{name}").BENCHMARKS[0]
        return bench.build(), bench.make_inputs("small", np.random.default_rng(0))
    if name.startswith("lenet"):
        from benchmarks.onnx_bench import make_model
        from hpvm.frontend.onnx import load, testing
        model, shape, x = make_model("lenet", int(name[len("lenet"):]))
        return load(testing.export(model, shape)), {"x": x}
    raise SystemExit(f"unknown program '{name}'; choose from {', '.join(PROGRAMS)}")


def measure(exe, inputs: dict, repeat: int) -> tuple[float, float, int, str]:
    """(median call s, median kernel-sum s, nodes, placement summary)."""
    exe(**inputs)
    calls, kernels = [], []
    for _ in range(repeat):
        began = time.perf_counter()
        exe(**inputs)
        calls.append(time.perf_counter() - began)
        kernels.append(exe.report().node_seconds)
    records = exe.report().node_records
    placed = Counter(r.target for r in records)
    summary = " ".join(f"{t}:{n}" for t, n in sorted(placed.items()))
    return statistics.median(calls), statistics.median(kernels), len(records), summary


def target_options(items: list[str]) -> dict:
    """``--option TARGET.KEY=VALUE`` items as compile options (values read
    as JSON when they parse, else as text)."""
    options: dict = {}
    for item in items:
        key, _, text = item.partition("=")
        target, _, name = key.partition(".")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        options.setdefault(target, {})[name] = value
    return options


def run(programs: list[str], targets: list[str], repeat: int, options: dict | None = None
        ) -> list[str]:
    from hpvm.runtime import compile
    lines = ["| program | target | placed | nodes | call us | kernels us | overhead us/node |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for name in programs:
        module, inputs = program_inputs(name)
        for target in targets:
            exe = compile(module, [target], options=options or {})
            try:
                call, kernels, nodes, placed = measure(exe, inputs, repeat)
            finally:
                exe.close()
            per_node = (call - kernels) / max(nodes, 1)
            lines.append(f"| {name} | {target} | {placed} | {nodes} | {call * 1e6:.0f} | "
                         f"{kernels * 1e6:.0f} | {per_node * 1e6:.1f} |")
            print(lines[-1], flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--targets", default="interp,cpu,aten")
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--option", action="append", default=[], metavar="TARGET.KEY=VALUE",
                        help="a target option, e.g. gpu_opencl.asynchronous=true")
    args = parser.parse_args(argv)
    split = lambda text: [t.strip() for t in text.split(",") if t.strip()]  # noqa: E731
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/runtime_overhead_bench.py",
                                                 *(sys.argv[1:] if argv is None else argv)])
    print(f"command: {command}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores visible, "
          f"Python {platform.python_version()}; median of {args.repeat}")
    lines = run(split(args.programs), split(args.targets), args.repeat,
                target_options(args.option))
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
