"""Command line of the benchmark suite.

    python -m benchmarks run --targets cpu,gpu_opencl --size large \\
        [--programs blur,edge] [--repeat 5] [--json out.json] [--plot ratios.svg]
        [--compare earlier.json]
    python -m benchmarks list

Prints a Markdown table (program, target, median ms, peer, peer ms,
ratio = hpvm ms / peer ms) and the skipped targets / unavailable peers;
see benchmarks/runner.py for the method.  Exit status 1 when a result is
wrong or a program failed, 2 for a bad command line.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
from importlib import metadata
from pathlib import Path

from .compare import CompareError, comparison_table, recorded_ratios
from .plot import ratio_svg
from .runner import format_notes, format_table, run_suite, select_benchmarks
from .suite import SIZES


def machine_info() -> dict:
    """What the numbers depend on: host, Python and library versions."""
    info = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version()}
    for package in ("numpy", "numba", "halide", "pyopencl"):
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[package] = None
    return info


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the programs, their suite and peers")
    run = commands.add_parser("run", help="run, check and time the programs and their peers")
    run.add_argument("--targets", default="cpu", help="comma-separated hpvm targets (default cpu)")
    run.add_argument("--size", choices=SIZES, default="small")
    run.add_argument("--programs", default="", help="comma-separated program names (default all)")
    run.add_argument("--repeat", type=int, default=5, help="timed runs per implementation (median)")
    run.add_argument("--json", type=Path, help="write machine info, command and rows here")
    run.add_argument("--plot", type=Path, help="write an SVG bar chart of the ratios here")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--compare", type=Path, help="a --json file of an earlier run: print each "
                                                   "ratio then and now (regressions marked)")
    run.add_argument("--pipeline", default="", help="hpvm passes run on each program first, "
                                                     "e.g. node-fusion,dce, or default (the "
                                                     "target's own pipeline)")
    run.add_argument("--interleave", action="store_true",
                     help="time each program's implementations in turns, a run of each per "
                          "round, so that a noisy machine's spells fall on all alike (not for "
                          "several thread pools: numba's, Halide's and the cpu target's idle "
                          "workers still spin while the next one runs)")
    return parser.parse_args(argv)


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def list_programs() -> int:
    for bench in select_benchmarks(None):
        peers = ", ".join(peer.name for peer in bench.peers) or "-"
        print(f"{bench.name:<18} {bench.suite:<10} peers: {peers}")
    return 0


def run(args: argparse.Namespace, argv: list[str]) -> int:
    if args.repeat < 1:
        print("error: --repeat must be at least 1", file=sys.stderr)
        return 2
    if args.compare:
        try:
            recorded_ratios(args.compare)
        except CompareError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        result = run_suite(split(args.programs) or None, split(args.targets), args.size,
                           args.repeat, progress=not args.quiet, pipeline=args.pipeline,
                           interleave=args.interleave)
    except ValueError as error:  # an unknown program name
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_table(result.rows))
    notes = format_notes(result)
    if notes:
        print("\n" + notes)
    if args.compare:
        print("\n" + comparison_table(result.rows, args.compare, args.size))
    command = "python -m benchmarks " + shlex.join(argv)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = {"machine": machine_info(), "command": command, "size": args.size,
                "repeat": args.repeat, **result.to_json()}
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.plot:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        args.plot.write_text(ratio_svg(result.rows, title=f"hpvm / peer, size {args.size}: {command}"))
    failed = [row for row in result.rows if row.status != "ok" or row.peer_status not in ("", "ok")]
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.command == "list":
        return list_programs()
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
