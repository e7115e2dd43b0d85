"""How gpu_opencl's default pipeline does across the sizes and written
forms of two families (issue 40), on each kernel's own time with inputs
on the device (node_times_bench.kernel_times):

- ``tiles``: the suite's sgemm (a kernel program) at each ``--sizes`` n
  (n x n x n), as written, with the default pipeline, and with each
  register-tile group form of ``--tiles`` (rows x cols in group x group
  work groups) alone;
- ``steps``: benchmarks/time_steps.py's heat steps on an ``--grid``
  square grid, as written and with the default pipeline, against the
  float4 copy kernel's bandwidth (a step reads and writes the grid once
  at least);
- ``orders``: benchmarks/loop_orders.py's nests written column by column
  (``--grid`` square), as written and with the default pipeline.

    python benchmarks/gpu_shapes_bench.py [--families tiles,steps,orders]
        [--sizes 512,1024,2048,4096] [--tiles 8x8/16,8x4/16,4x4/16,4x4/8]
        [--grid 4096] [--repeat 10]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def group_pipeline(tile: str) -> str:
    """register-tile's group form ``rows x cols / group`` alone."""
    shape, group = tile.split("/")
    rows, cols = shape.split("x")
    return (f"register-tile{{form=group rows={rows} cols={cols} group={group} kblock=16 "
            "unroll=16},dce")


def own_ms(program, inputs: dict, options: dict, repeat: int) -> float:
    """The kernels' own milliseconds of a call (their sum)."""
    from benchmarks.node_times_bench import kernel_times
    return 1e3 * sum(seconds for seconds, _ in
                     kernel_times(program, inputs, options, repeat).values())


def tiles(sizes: list[int], forms: list[str], repeat: int) -> list[str]:
    from benchmarks.programs.sgemm import sgemm
    rng = np.random.default_rng(0)
    lines = ["| n | as written | default | " + " | ".join(forms) + " |",
             "|" + " ---: |" * (len(forms) + 3)]
    for n in sizes:
        a, b, c = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(3))
        inputs = {"A": a, "B": b, "C": c, "alpha": np.float32(1.5), "beta": np.float32(-0.5)}
        options = [{}, {"pipeline": "default"}] + [{"pipeline": group_pipeline(f)} for f in forms]
        lines.append(f"| {n} | " + " | ".join(f"{own_ms(sgemm, inputs, o, repeat):.3f}"
                                              for o in options) + " |")
    return lines


def steps(grid: int, repeat: int) -> list[str]:
    from benchmarks import time_steps
    from benchmarks.roofline_bench import copy_bandwidth
    copy = copy_bandwidth(repeat)
    least = 8.0 * grid * grid * time_steps.STEPS   # bytes: the grid read and written a step
    lines = [f"copy kernel: {copy / 1e9:.0f} GB/s; {grid} x {grid} grid, {time_steps.STEPS} steps",
             "| form | as written ms | of copy | default ms | of copy |",
             "| --- | ---: | ---: | ---: | ---: |"]
    rng = np.random.default_rng(0)
    for name, program in time_steps.FORMS.items():
        inputs = time_steps.inputs_for(name, rng, grid, grid)
        cells = []
        for options in ({}, {"pipeline": "default"}):
            ms = own_ms(program, inputs, options, repeat)
            cells += [f"{ms:.3f}", f"{least / (ms / 1e3) / copy:.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def orders(grid: int, repeat: int) -> list[str]:
    from benchmarks import loop_orders
    lines = ["| form | as written ms | default ms |", "| --- | ---: | ---: |"]
    rng = np.random.default_rng(0)
    for name, program in loop_orders.FORMS.items():
        inputs = loop_orders.inputs_for(name, rng, grid, grid)
        lines.append(f"| {name} | " + " | ".join(
            f"{own_ms(program, inputs, options, repeat):.3f}"
            for options in ({}, {"pipeline": "default"})) + " |")
    return lines


FAMILIES = {"tiles": lambda args: tiles([int(n) for n in args.sizes.split(",")],
                                        args.tiles.split(","), args.repeat),
            "steps": lambda args: steps(args.grid, args.repeat),
            "orders": lambda args: orders(args.grid, args.repeat)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="tiles,steps,orders")
    parser.add_argument("--sizes", default="512,1024,2048,4096")
    parser.add_argument("--tiles", default="8x8/16,8x4/16,4x4/16,4x4/8")
    parser.add_argument("--grid", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    families = args.families.split(",")
    unknown = set(families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)} (choose among {', '.join(FAMILIES)})")
    for family in families:
        print("\n".join(FAMILIES[family](args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
