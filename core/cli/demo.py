"""``hpvm demo``: blur an image on every installed target and check each
result against numpy."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ..errors import HpvmError
from .output import format_table, write_text_atomically

DEFAULT_SIZE = (256, 256)


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="blur an image on every target and check the results",
        description="Run a 3x3 box blur (one HPVM node replicated over the pixels) on "
                    "every installed target with a generated image, compare each "
                    "result with numpy, and print a table.")
    parser.add_argument("--size", type=_size, default=DEFAULT_SIZE, metavar="HxW",
                        help="image size (default: %dx%d)" % DEFAULT_SIZE)
    parser.add_argument("--save", metavar="DIR",
                        help="also write the program (blur.hpvm) and its input "
                             "(blur_inputs.npz) to DIR, for `hpvm ir/opt/run`")
    parser.set_defaults(handler=run_demo)


def _size(text: str) -> tuple[int, int]:
    try:
        height, width = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not HxW, e.g. 48x64") from None
    if height < 1 or width < 1:
        raise argparse.ArgumentTypeError(f"'{text}': sizes must be positive")
    return height, width


def run_demo(args) -> int:
    from ..registry import get_registry
    from .demo_program import blur_inputs, blur_module, blur_reference
    module = blur_module()
    inputs = blur_inputs(*args.size)
    if args.save:
        program, data = save_demo(args.save, args.size)
        print(f"wrote {program} and {data}; try:\n  hpvm run {program} --inputs {data} "
              f"--outputs {Path(args.save) / 'blurred.npz'}\n")
    expected = blur_reference(inputs["image"])
    print(f"hpvm demo: 3x3 box blur of a {args.size[0]}x{args.size[1]} image, "
          "checked against numpy\n")
    rows = [_try_target(info, module, inputs, expected)
            for info in sorted(get_registry().targets(),
                               key=lambda info: not info.availability.available)]
    print(format_table(("target", "correct", "time", "note"), rows))
    ran = [row for row in rows if row[1] != "-"]
    return 0 if ran and all(row[1] == "yes" for row in ran) else 1


def _try_target(info, module, inputs, expected) -> tuple[str, str, str, str]:
    from .run import run_on_target
    if not info.availability.available:
        return info.name, "-", "-", f"not available: {info.availability.reason}"
    start = time.perf_counter()
    try:
        outputs = run_on_target(module, info.name, inputs)
    except HpvmError as err:
        return info.name, "-", "-", str(err).splitlines()[0]
    seconds = time.perf_counter() - start
    error = float(np.max(np.abs(outputs["blurred"] - expected)))
    correct = bool(np.allclose(outputs["blurred"], expected, rtol=1e-5, atol=1e-6))
    note = "" if correct else f"max abs error {error:.3g}"
    return info.name, "yes" if correct else "NO", f"{seconds * 1e3:.1f} ms", note


def save_demo(folder: str | Path, size: tuple[int, int] = DEFAULT_SIZE) -> tuple[Path, Path]:
    """Write the demo program (``blur.hpvm``) and a generated input
    (``blur_inputs.npz``) to ``folder``; returns both paths."""
    from .demo_program import blur_inputs, blur_module
    from .ir_commands import module_text
    from .run import write_npz
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    program, data = folder / "blur.hpvm", folder / "blur_inputs.npz"
    write_text_atomically(program, module_text(blur_module()))
    write_npz(data, blur_inputs(*size))
    return program, data
