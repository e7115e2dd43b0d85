"""``hpvm demo``: the bundled edge-detection program compiled for every
installed target, run on the bundled image, each result checked against
the reference interpreter; writes the edge image."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..demo.edge_detection import edge_detect
from ..demo.image import bundled_image, png_bytes, read_pgm
from ..errors import HpvmError
from ..files import write_atomically, write_text_atomically
from ..interp import run_module
from ..npz import write_npz
from ..registry import get_registry
from ..runtime import compile as compile_program
from ..runtime.execution import timing_label_of
from .demo_program import blur_inputs, blur_module
from .ir_commands import module_text
from .output import format_table

DEFAULT_OUTPUT = "edges.png"
MAX_MISMATCH = 0.001
"""Share of pixels allowed to differ from the interpreter: a pixel whose
gradient sits exactly at the threshold may flip with float rounding (e.g.
fused multiply-adds)."""


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        description="Compile the bundled edge-detection program (7 dataflow nodes) for "
                    "every installed target, run it on the bundled image, compare each "
                    "result with the reference interpreter, print a table and write "
                    "the edge image.")
    parser.add_argument("--image", metavar="IMAGE.pgm", help="an 8-bit PGM image instead of "
                        "the bundled one")
    parser.add_argument("--threshold", type=float, default=0.3,
                        help="edge threshold, relative to the strongest gradient (default 0.3)")
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="EDGES.png",
                        help=f"where to write the edge image (default: {DEFAULT_OUTPUT})")
    parser.add_argument("--save", metavar="DIR",
                        help="also write a small blur program (blur.hpvm) and its input "
                             "(blur_inputs.npz) to DIR, to try `hpvm ir/opt/run` on")
    parser.set_defaults(handler=run_demo)


def run_demo(args) -> int:
    if args.save:
        program, data = save_demo(args.save)
        print(f"wrote {program} and {data}; try:\n  hpvm run {program} --inputs {data}\n")
    image = read_pgm(Path(args.image).read_bytes()) if args.image else bundled_image()
    inputs = {"img": image, "threshold": np.float32(args.threshold)}
    module = edge_detect.build()
    print(f"hpvm demo: edge detection ({len(module.root_graph.nodes)} nodes) on a "
          f"{image.shape[0]}x{image.shape[1]} image, every target checked against the "
          "reference interpreter\n")
    expected = run_module(module, inputs)["edges"]
    rows, best = [], None
    for info in sorted(get_registry().targets(), key=lambda i: not i.availability.available):
        row, edges = _try_target(info, module, inputs, expected)
        rows.append(row)
        if edges is not None and info.name != "interp" and best is None:
            best = edges
    print(format_table(("target", "correct", "compile", "run", "note"), rows))
    write_atomically(args.output, lambda handle: handle.write(png_bytes(
        expected if best is None else best)))
    print(f"\nwrote {args.output}")
    ran = [row for row in rows if row[1] != "-"]
    return 0 if ran and all(row[1] == "yes" for row in ran) else 1


def _try_target(info, module, inputs, expected):
    """A table row for one target, and its edge image when it ran."""
    if not info.availability.available:
        return (info.name, "-", "-", "-", f"not available: {info.availability.reason}"), None
    try:
        began = time.perf_counter()
        exe = compile_program(module, targets=[info.name])
        compiled = time.perf_counter() - began
        exe(**inputs)  # the first run loads the artifacts onto the device
        began = time.perf_counter()
        edges = exe(**inputs)["edges"]
        ran = time.perf_counter() - began
    except HpvmError as err:
        return (info.name, "-", "-", "-", str(err).splitlines()[0]), None
    labels = sorted({timing_label_of(record.target, info.name)
                     for record in exe.report().node_records} - {""})
    mismatched = int(np.count_nonzero(edges != expected))
    correct = mismatched <= MAX_MISMATCH * expected.size
    placed = sum(1 for t in exe.placement.targets.values() if t == info.name)
    notes = [f"{placed}/{len(exe.placement.targets)} nodes on {info.name}"]
    if placed < len(exe.placement.targets):
        notes.append("the rest fell back to " + ", ".join(
            sorted({t for t in exe.placement.targets.values() if t != info.name})))
    if mismatched:
        notes.append(f"{mismatched} pixel(s) differ")
    run = f"{ran * 1e3:.1f} ms" + "".join(f" ({label})" for label in labels)
    return (info.name, "yes" if correct else "NO", f"{compiled * 1e3:.0f} ms", run,
            "; ".join(notes)), edges


def save_demo(folder: str | Path, size: tuple[int, int] = (64, 64)) -> tuple[Path, Path]:
    """Write a small blur program (``blur.hpvm``) and a generated input
    (``blur_inputs.npz``) to ``folder``; returns both paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    program, data = folder / "blur.hpvm", folder / "blur_inputs.npz"
    write_text_atomically(program, module_text(blur_module()))
    write_npz(data, blur_inputs(*size))
    return program, data
