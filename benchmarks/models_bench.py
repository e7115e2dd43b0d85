"""Models of real size (benchmarks/models.py: ResNet-18, ResNet-50,
MobileNetV2, a BERT-style encoder) on hpvm's cpu target against
onnxruntime, OpenVINO and torch eager, in the same run (issue 39).

    .venv/bin/python benchmarks/models_bench.py [--models resnet18,mobilenetv2]
        [--batch 1,8] [--threads N] [--repeat 10] [--targets cpu] [--openvino]
        [--device cuda] [--torch-compile MODE] [--nodes 10] [--json out.json]
        [--compare earlier.json] [--cpu-variant blas=False] [--aten-variant precision=tf32]

hpvm loads each model with ``hpvm.frontend.torch.load`` (torch.export, the
default TENSOR_PIPELINE); onnxruntime and OpenVINO read the file
``torch.onnx.export`` writes (opset 17).  Each implementation warms up for
half a second and the table gives the median of ``--repeat`` calls, host
input to host output.  Ratio = this row's time / onnxruntime's in the same
run.  ``compile`` is hpvm's compile and first call, from a cold start of
the process's compile cache (set ``HPVM_CACHE_DIR`` to an empty folder to
time a cold compile).  ``--nodes K`` prints the K slowest nodes of hpvm's
last run of each model (``exe.report()``).  With ``--device cuda`` the aten
target and torch run on the GPU, torch twice: with its defaults (TF32
convolutions) and in FP32, as hpvm's exact nodes compute.
``--cpu-variant`` and ``--aten-variant`` add a row of the target compiled
with other options (``--aten-variant precision=tf32``: aten's convolutions
and products on TF32 tensor cores, as torch's defaults have them).
``--json`` records the run (command, machine, each row with its ratio);
``--compare`` prints each ratio beside a recorded run's
(benchmarks/compare.py), marking those that moved past 10%.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.compare import CompareError, comparison_table, recorded_ratios  # noqa: E402
from benchmarks.onnx_bench import (  # noqa: E402
    OPENVINO, Row, format_table, machine, median_ms, onnxruntime_runner, openvino_runner,
    relative_error, torch_runner,
)

MODEL_NAMES = ("resnet18", "resnet50", "mobilenetv2", "bert")


def hpvm_runner(module, target: str, options: dict, x: np.ndarray):
    """(run, compile seconds, executable): the first call is part of the compile."""
    from hpvm.runtime import compile
    name = module.root_graph.params[0].name
    began = time.perf_counter()
    exe = compile(module, [target], options)
    exe(**{name: x})
    seconds = time.perf_counter() - began
    output = next(p.name for p in module.root_graph.params if p.direction == "out")
    return (lambda: exe(**{name: x})[output]), seconds, exe


def slowest_nodes(exe, count: int) -> str:
    records = sorted(exe.report().node_records, key=lambda r: -r.seconds)
    total = sum(r.seconds for r in records)
    lines = [f"  nodes: {total * 1e3:.2f} ms in all; the slowest:"]
    lines += [f"    {r.node:<28} {r.seconds * 1e3:8.3f} ms" for r in records[:count]]
    return "\n".join(lines)


def bench(name: str, batch: int, args) -> list[Row]:
    import torch
    from hpvm.frontend.onnx.testing import export
    from hpvm.frontend.torch import load

    from benchmarks.models import MODELS
    model, shape = MODELS[name]()
    x = np.random.default_rng(0).standard_normal((batch,) + shape).astype(np.float32)
    label = f"{name}, batch {batch}"
    reference = torch_runner(model, x)()
    module = load(model, (torch.from_numpy(x),))
    hpvm_rows = [(implementation_name(target, args), target, target_options(target, args))
                 for target in args.targets]
    hpvm_rows += [(f"{implementation_name(target, args)} ({variant})", target,
                   {**target_options(target, args), **variant_options(variant)})
                  for target, variants in (("cpu", args.cpu_variant), ("aten", args.aten_variant))
                  for variant in variants]
    runners = []
    for implementation, target, options in hpvm_rows:
        run, seconds, exe = hpvm_runner(module, target, options, x)
        runners.append((implementation, run, f"compile {seconds:.1f} s", exe))
    proto = export(model, shape)
    runners.append(("onnxruntime", onnxruntime_runner(proto, x, args.threads), "", None))
    if args.openvino:
        runners.append((OPENVINO, openvino_runner(proto, x, args.threads), "", None))
    runners.append(("torch (eager, no_grad)", torch_runner(model, x, args.device), "", None))
    if args.device.startswith("cuda"):  # torch's convolutions are TF32 unless told not to
        runners.append(("torch (eager, no_grad, no TF32)",
                        torch_runner(model, x, args.device, tf32=False), "", None))
    if args.torch_compile:
        runners.append((f"torch.compile ({args.torch_compile})",
                        torch_runner(model, x, args.device, args.torch_compile), "", None))
    rows = []
    for implementation, run, note, exe in runners:
        error = relative_error(np.asarray(run()), reference)
        rows.append(Row(label, implementation, median_ms(run, args.repeat), error, note))
        if exe is not None and args.nodes:
            print(f"{label}, {implementation}:\n{slowest_nodes(exe, args.nodes)}", flush=True)
    return rows


def implementation_name(target: str, args) -> str:
    return f"hpvm {target}" + (f" {args.device}" if target == "aten" else "")


def target_options(target: str, args) -> dict:
    """The options every row of ``target`` is compiled with."""
    return {"cpu": {"threads": args.threads}, "aten": {"device": args.device}}.get(target, {})


def variant_options(text: str) -> dict:
    """``blas=False,lanes=8`` as cpu options (values are Python literals)."""
    options = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        try:
            options[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            options[key.strip()] = value.strip()
    return options


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODEL_NAMES),
                        help=f"comma-separated, from {', '.join(MODEL_NAMES)}")
    parser.add_argument("--batch", default="1,8", help="batch sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--targets", default="cpu", help="hpvm targets, comma-separated")
    parser.add_argument("--openvino", action="store_true", help="also OpenVINO's CPU plugin")
    parser.add_argument("--device", default="cpu", help="aten's and torch's device")
    parser.add_argument("--torch-compile", metavar="MODE", default=None)
    parser.add_argument("--nodes", type=int, default=0, help="print the slowest hpvm nodes")
    parser.add_argument("--cpu-variant", action="append", default=[], metavar="KEY=VALUE,...",
                        help="another hpvm cpu row compiled with these options (repeatable)")
    parser.add_argument("--aten-variant", action="append", default=[], metavar="KEY=VALUE,...",
                        help="another hpvm aten row compiled with these options (repeatable), "
                             "e.g. precision=tf32: TF32 convolutions, as torch's defaults")
    parser.add_argument("--json", type=Path, help="write the command, machine and rows here")
    parser.add_argument("--compare", type=Path, help="a --json file of an earlier run: print "
                                                     "each ratio then and now")
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.models if m not in MODEL_NAMES]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(MODEL_NAMES)}")
    args.batch = [int(b) for b in args.batch.split(",") if b.strip()]
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    return args


@dataclass(frozen=True)
class RatioRow:
    """A row as benchmarks/compare.py matches them: the model and batch
    (program), the implementation (target), onnxruntime (peer)."""

    program: str
    target: str
    peer: str
    ratio: float
    median_ms: float
    error: float
    note: str


def ratio_rows(rows: list[Row]) -> list[RatioRow]:
    peers = {r.model: r.median_ms for r in rows if r.implementation == "onnxruntime"}
    return [RatioRow(r.model, r.implementation, "onnxruntime", r.median_ms / peers[r.model],
                     r.median_ms, r.error, r.note) for r in rows]


def main(argv=None) -> int:
    import torch
    args = parse_args(argv)
    if args.compare is not None:
        try:
            recorded_ratios(args.compare)
        except CompareError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    torch.set_num_threads(args.threads)
    rows = [row for name in args.models for batch in args.batch for row in bench(name, batch,
                                                                                   args)]
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/models_bench.py",
                                                 *(sys.argv[1:] if argv is None else argv)])
    print(f"command: {command}")
    print(f"machine: {machine()}; {args.threads} threads, median of {args.repeat}")
    print()
    print(format_table(rows))
    ratios = ratio_rows(rows)
    if args.compare is not None:
        print("\n" + comparison_table(ratios, args.compare, None))
    if args.json is not None:
        record = {"command": command, "machine": machine(), "threads": args.threads,
                  "size": None, "rows": [asdict(r) for r in ratios]}
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
