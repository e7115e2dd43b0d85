"""``hpvm approx``: accuracy-aware approximation tuning of a tensor program.

    hpvm approx model.onnx --qos accuracy --loss 1 --data calib.npz --targets aten,cpu \\
        -o model.hpvmx --svg curve.svg
    hpvm approx blur.hpvm --qos psnr --min 30 --data frames.npz --targets cpu

``--data`` holds the program's inputs by name (and, for ``--qos accuracy``,
the labels as ``labels``, or the array ``--labels`` names).  A progress bar
shows every run; the curve is printed at the end, drawn with ``--svg``,
and shipped inside the executable written with ``-o`` (``exe.use(k)``;
``hpvm tune --refine`` re-measures it on another machine).
"""
from __future__ import annotations

from pathlib import Path

from ..files import check_writable, write_text_atomically
from ..npz import read_npz
from ..tune.approx import ApproxError, accuracy, approx_tune, psnr, ssim
from ..tune.approx.knobs import EVERY, TECHNIQUES
from ..tune.approx.predict import MODELS
from ..tune.approx.qos import QOS_NAMES
from ..tune.approx.tuner import MODES
from .build import _target_list, load_program, save_atomically
from .output import Progress


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "approx",
        description="Find the configurations of approximation knobs (FP16, perforated and "
                    "sampled convolution, reduction sampling) of SOURCE's tensor ops that keep "
                    "the QoS goal on --data, fastest first, as a Pareto curve.")
    parser.add_argument("source", metavar="SOURCE",
                        help="MODEL.onnx, MODEL.keras, FILE.hpvm or prog.py:NAME")
    parser.add_argument("--qos", choices=QOS_NAMES, default="accuracy")
    goal = parser.add_mutually_exclusive_group(required=True)
    goal.add_argument("--loss", type=float, help="QoS loss allowed below the exact program "
                                                 "(accuracy: percentage points)")
    goal.add_argument("--min", type=float, dest="minimum", help="lowest QoS allowed (e.g. "
                                                                "PSNR 30)")
    parser.add_argument("-d", "--data", metavar="DATA.npz", required=True,
                        help="the program's inputs by name, and the labels")
    parser.add_argument("--labels", default="labels", help="the labels' array in --data")
    parser.add_argument("-t", "--targets", type=_target_list, default=["cpu"],
                        help="comma-separated targets (default: cpu)")
    parser.add_argument("--mode", choices=MODES, default="predictive")
    parser.add_argument("--model", choices=MODELS, default="pi2",
                        help="error-composition model of predictive tuning")
    parser.add_argument("-b", "--budget", type=int,
                        help="configurations to search (predictive 4000, empirical 60)")
    parser.add_argument("--validate", type=int, default=12,
                        help="predicted configurations run for real (12)")
    parser.add_argument("--techniques", type=_target_list, default=list(TECHNIQUES),
                        help=f"knob families (default: {','.join(TECHNIQUES)})")
    parser.add_argument("--every", type=_target_list, default=[str(k) for k in EVERY],
                        help="K of the perforation and sampling knobs (default: 2,3,4)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per configuration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", metavar="EXE.hpvmx",
                        help="write the executable with its curve")
    parser.add_argument("--curve", metavar="CURVE.json", help="write the curve as JSON")
    parser.add_argument("--svg", metavar="CURVE.svg", help="draw the curve")
    parser.set_defaults(handler=approx_command)


def approx_command(args) -> int:
    for path in (args.curve, args.svg):
        if path:
            check_writable(path)
    every = _every(args.every)
    unknown = sorted(set(args.techniques) - set(TECHNIQUES))
    if unknown:
        raise ApproxError(f"unknown technique(s) {', '.join(unknown)} (fix: choose from "
                          f"{', '.join(TECHNIQUES)})")
    module = load_program(args.source)
    data = read_npz(args.data)
    labels = data.pop(args.labels, None)
    if args.qos == "accuracy":
        if labels is None:
            raise ApproxError(f"{args.data} has no array '{args.labels}' of labels for "
                              "--qos accuracy (fix: add it, or name it with --labels)")
        qos = accuracy(labels)
    else:
        qos = psnr() if args.qos == "psnr" else ssim()
    bar: list[Progress] = []

    def progress(label: str, done: int, total: int) -> None:
        if not bar:
            bar.append(Progress(total))
        bar[0].step(label)

    result = approx_tune(module, args.targets, data, qos, loss=args.loss, minimum=args.minimum,
                         mode=args.mode, model=args.model, budget=args.budget,
                         validate=args.validate, techniques=tuple(args.techniques), every=every,
                         repeat=args.repeat, seed=args.seed, progress=progress)
    if bar:
        bar[0].close()
    print(result.summary())
    if args.curve:
        write_text_atomically(args.curve, result.curve.to_text())
        print(f"wrote {args.curve}")
    if args.svg:
        write_text_atomically(args.svg, result.curve.svg(f"hpvm approx {Path(args.source).name}"))
        print(f"wrote {args.svg}")
    if args.output:
        save_atomically(result.executable(), Path(args.output))
        print(f"wrote {args.output} with {len(result.curve)} configurations")
    return 0


def _every(values: list[str]) -> tuple[int, ...]:
    if not all(v.isdigit() and 2 <= int(v) <= 16 for v in values):
        raise ApproxError(f"--every {','.join(values)}: give integers from 2 to 16 "
                          "(e.g. --every 2,3,4)")
    return tuple(int(v) for v in values)
