"""``hpvm tune``: design-space exploration of a program on its targets.

    hpvm tune prog.py:fn --targets gpu_opencl,cpu --inputs in.npz --budget 200 \\
        -o tuning.json --config-out best.json --svg tuning.svg
    hpvm tune prog.py:fn --targets cpu --list        # the space, in words
    hpvm compile prog.py:fn --config best.json -o prog.hpvmx
    hpvm tune --refine model.hpvmx [--inputs in.npz]  # re-measure its approximation curve

A progress bar shows each sample and the best so far; at the end the
winning configuration is printed in words.  The record (``-o``) is written
after every batch; ``--resume`` goes on from it.
"""
from __future__ import annotations

from pathlib import Path

from ..files import check_writable, write_text_atomically
from ..npz import read_npz
from ..runtime import Executable
from ..tune import TuneError, space, tune
from ..tune.approx.refine import refine
from ..tune.executors import EXECUTORS, executor
from ..tune.plot import record_svg
from ..tune.search import ENGINES
from ..tune.space import PASS_PARAMETERS
from .build import _target_list, load_program, save_atomically
from .output import Progress


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune",
        description="Explore SOURCE's design space (fusions, unroll factors, privatisation, "
                    "which target runs each node, the targets' knobs) by running samples "
                    "on --inputs or estimating them, and report the best configuration.")
    parser.add_argument("source", metavar="SOURCE", nargs="?",
                        help="prog.py:NAME, FILE.hpvm, MODEL.onnx or MODEL.keras")
    parser.add_argument("--refine", metavar="EXE.hpvmx",
                        help="measure every configuration of the executable's approximation "
                             "curve on this machine, keep the Pareto-optimal ones, save it")
    parser.add_argument("-t", "--targets", type=_target_list, default=["cpu"],
                        help="comma-separated targets (default: cpu); more than one adds a "
                             "placement parameter per node")
    parser.add_argument("-i", "--inputs", metavar="IN.npz", help="inputs the samples run on")
    parser.add_argument("--reference", metavar="OUT.npz",
                        help="the outputs samples must give (default: the interpreter's, "
                             "slow for large programs)")
    parser.add_argument("-b", "--budget", type=int, default=100, help="samples to evaluate (100)")
    parser.add_argument("--passes", type=_target_list, default=list(PASS_PARAMETERS),
                        help=f"passes whose parameters to tune (default: {','.join(PASS_PARAMETERS)}"
                             "; 'none' for target knobs and placement only)")
    parser.add_argument("--reassociate", action="store_true",
                        help="let parallel-reduce fold float sums that kernels write as chains "
                             "in another order (their rounding changes; samples are still "
                             "checked against the reference)")
    parser.add_argument("--engine", choices=ENGINES, default="auto",
                        help="auto: enumerate a space within the budget, else HyperMapper")
    parser.add_argument("--mode", choices=("measure", "estimate"), default="measure",
                        help="run each sample, or ask the targets' cost models")
    parser.add_argument("--objectives", type=_target_list, default=["seconds"],
                        help="seconds (whole calls), node_seconds (the nodes' own times: "
                             "no host copies, so knobs of copies alone stay at their "
                             "defaults), or two for a Pareto front, e.g. "
                             "seconds,compile_seconds")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="samples at a time (1)")
    parser.add_argument("--executor", choices=EXECUTORS, default="local")
    parser.add_argument("--address", help="the Ray cluster to use (--executor ray)")
    parser.add_argument("--gpus", type=float, default=0, help="GPUs a Ray task asks for")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a sample may take")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per sample (median)")
    parser.add_argument("--confirm", type=int, default=3,
                        help="best samples measured again, longer, with the defaults, at the "
                             "end; the best of those wins (0: off)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", metavar="RECORD.json", help="the tuning record")
    parser.add_argument("--resume", action="store_true", help="go on from the record at -o")
    parser.add_argument("--config-out", metavar="BEST.json", help="the chosen configuration")
    parser.add_argument("--svg", metavar="TUNING.svg", help="draw best-so-far (and the Pareto front)")
    parser.add_argument("--list", action="store_true", help="print the space and stop")
    parser.set_defaults(handler=tune_command)


def tune_command(args) -> int:
    if args.refine:
        return refine_command(args)
    if not args.source:
        raise TuneError("give the program to tune (SOURCE), or --refine EXE.hpvmx")
    passes = () if args.passes == ["none"] else tuple(args.passes)
    module = load_program(args.source)
    if args.list:
        design = space(module, args.targets, passes=passes, reassociate=args.reassociate)
        print(design.describe())
        print(f"{len(design)} parameters, {design.size} configurations")
        return 0
    if args.mode == "measure" and not args.inputs:
        raise TuneError("measuring samples needs inputs (fix: give --inputs IN.npz, or "
                        "--mode estimate)")
    for path in (args.output, args.config_out, args.svg):
        if path:
            check_writable(path)
    inputs = read_npz(args.inputs) if args.inputs else {}
    reference = read_npz(args.reference) if args.reference else None
    pool = executor(args.executor, args.jobs, args.address, args.gpus)
    bar = Progress(args.budget)
    try:
        result = tune(module, args.targets, inputs, args.budget, passes=passes,
                      engine=args.engine, mode=args.mode, objectives=args.objectives,
                      executor=pool, timeout=args.timeout, repeat=args.repeat,
                      confirm=args.confirm, seed=args.seed, reference=reference,
                      record=args.output, resume=args.resume, reassociate=args.reassociate,
                      progress=lambda record, sample: bar.step(_progress_label(record, sample)))
    finally:
        pool.close()
    bar.close()
    print(result.summary())
    if args.config_out and result.best is not None:
        result.best.save(args.config_out)
        print(f"wrote {args.config_out}")
    if args.svg:
        write_text_atomically(args.svg, record_svg(result.record, title=f"hpvm tune {args.source}"
                                                   f" on {','.join(args.targets)}"))
        print(f"wrote {args.svg}")
    if args.output:
        print(f"wrote {args.output}")
    return 0 if result.best is not None else 1


def refine_command(args) -> int:
    exe = Executable.load(args.refine)
    inputs = read_npz(args.inputs) if args.inputs else None
    count = len(exe.configurations())
    bar = Progress(count)
    try:
        curve = refine(exe, inputs, args.repeat, progress=bar.step)
    finally:
        exe.close()
    bar.close()
    print(curve.format())
    save_atomically(exe, Path(args.refine))
    print(f"wrote {args.refine}: {len(curve)} of {count} configurations kept on {curve.machine}")
    return 0


def _progress_label(record, sample) -> str:
    name = record.objectives[0]
    best = record.best()
    now = f"{sample.objectives[name] * 1e3:.3g} ms" if sample.feasible else "infeasible"
    return f"sample {now}; best {best.objectives[name] * 1e3:.3g} ms" if best else now
