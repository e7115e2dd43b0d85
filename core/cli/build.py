"""``hpvm compile``, ``hpvm plan``, ``hpvm viz``: from a program to the
portable module, a saved executable, a placement, or a picture.

SOURCE is ``prog.py:NAME`` (an @hpvm.program, a builder Graph, a Module or
a function making one), a ``.hpvm`` file, an ``.onnx`` model or a Keras
model file (``.keras``, ``.h5``; batch size 1)."""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from .. import api
from ..errors import HpvmError
from ..files import check_writable, write_text_atomically
from ..frontend import compile_program, draw
from ..frontend.keras import MODEL_SUFFIXES as KERAS_SUFFIXES
from ..frontend.keras import load as load_keras
from ..frontend.onnx import load as load_onnx
from ..ir.verify import verify
from ..options import resolve_compile_options
from ..registry import get_registry
from ..runtime import plan
from ..runtime.compiler import with_fallbacks
from .ir_commands import load_verified, module_text


def add_parsers(subparsers) -> None:
    compile_ = subparsers.add_parser(
        "compile",
        description="Compile SOURCE (prog.py:NAME, FILE.hpvm, MODEL.onnx or MODEL.keras). "
                    "--emit ir writes the portable module; --emit exe (the default) "
                    "compiles it for --targets and saves the executable folder, which "
                    "`hpvm run` runs.")
    compile_.add_argument("source", metavar="SOURCE")
    compile_.add_argument("--emit", choices=("ir", "exe"), default="exe")
    _add_targets(compile_, default=None)
    compile_.add_argument("--triple", help="cpu target: emit object code for this machine "
                          "(e.g. aarch64-linux-gnu, riscv64-linux-gnu)")
    compile_.add_argument("--pipeline", default="", metavar="PASSES",
                          help="passes run on the program before placement, e.g. "
                               "'node-fusion,dce', or 'default' for the first target's own")
    compile_.add_argument("--config", metavar="BEST.json",
                          help="apply a configuration hpvm tune chose (its targets are the "
                               "default --targets)")
    _add_options(compile_)
    compile_.add_argument("-o", "--output", required=True, metavar="OUT")
    compile_.set_defaults(handler=compile_command)

    plan = subparsers.add_parser(
        "plan",
        description="Place SOURCE's nodes on --targets (hints, matchers, then the "
                    "fallback) and print the placement with the reason for each node.")
    plan.add_argument("source", metavar="SOURCE")
    _add_targets(plan)
    _add_options(plan)
    plan.set_defaults(handler=plan_command)

    viz = subparsers.add_parser(
        "viz",
        description="Draw SOURCE's hierarchical dataflow graph (internal nodes as "
                    "clusters); with --targets, each node shows where it runs.")
    viz.add_argument("source", metavar="SOURCE")
    viz.add_argument("-o", "--output", required=True, metavar="DFG.svg")
    viz.add_argument("-t", "--targets", type=_target_list, default=None,
                     help="comma-separated targets, to show the placement")
    viz.set_defaults(handler=viz_command)


DEFAULT_TARGETS = ["cpu"]


def _add_targets(parser, default=DEFAULT_TARGETS) -> None:
    parser.add_argument("-t", "--targets", type=_target_list, default=default,
                        help="comma-separated target names in order of preference "
                             "(default: cpu); `hpvm targets` lists them")


def _add_options(parser) -> None:
    parser.add_argument("-O", "--option", dest="options", action="append", default=[],
                        type=_option, metavar="KEY=VALUE",
                        help="a compile option of the targets (repeatable), e.g. -O "
                             "precision=fp16; `hpvm targets --options` lists them")


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"'{text}' is not KEY=VALUE (e.g. precision=fp16)")
    return key.strip(), value.strip()


def _target_list(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def load_program(source: str):
    """The verified Module of SOURCE (see the module docstring)."""
    if source.endswith(".hpvm"):
        return load_verified(source)
    if source.endswith(".onnx"):
        module = load_onnx(source)
    elif source.endswith(KERAS_SUFFIXES):
        module = load_keras(source)    # batch size 1
    elif ":" in source:
        module = compile_program(source)
    else:
        raise HpvmError(f"'{source}' is not a program: give prog.py:NAME, FILE.hpvm, MODEL.onnx "
                        "or MODEL.keras")
    verify(module)
    return module


def compile_command(args) -> int:
    check_writable(args.output)
    module = load_program(args.source)
    if args.emit == "ir":
        write_text_atomically(args.output, module_text(module))
        print(f"wrote {args.output}")
        return 0
    options = dict(args.options)
    if args.triple:
        options["triple"] = args.triple
    if args.pipeline:
        options["pipeline"] = args.pipeline
    targets = args.targets or (None if args.config else DEFAULT_TARGETS)
    exe = api.compile(module, targets=targets, options=options, config=args.config)
    save_atomically(exe, Path(args.output))
    print(exe.placement.format())
    print(f"wrote {args.output}")
    return 0


def save_atomically(exe, folder: Path) -> None:
    """Save into a new folder beside ``folder``, then swap it in: a failed
    save leaves an existing executable as it was."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        exe.save(staging)
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def plan_command(args) -> int:
    registry = get_registry()
    per_target = resolve_compile_options(dict(args.options), with_fallbacks(args.targets),
                                         registry)
    print(plan(load_program(args.source), args.targets, registry, per_target).format())
    return 0


def viz_command(args) -> int:
    module = load_program(args.source)
    placement = None
    if args.targets:
        placed = plan(module, args.targets, get_registry())
        placement = placed.node_targets()
    check_writable(args.output)
    draw(module, args.output, placement)
    print(f"wrote {args.output}")
    return 0
