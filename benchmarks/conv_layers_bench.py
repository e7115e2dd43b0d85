"""Where a model loses to onnxruntime, convolution by convolution: hpvm's
nodes (``exe.report()``) beside onnxruntime's own profile
(``SessionOptions.enable_profiling``), paired in model order (issue 39).

    .venv/bin/python benchmarks/conv_layers_bench.py --model mobilenetv2 [--batch 1]
        [--threads N] [--repeat 20] [--top 15]

Prints each side's call and node time, the time per kind of node, then
the convolutions with the largest gap: shapes, stride, both times and
GFLOP/s.  Both run the same model (benchmarks/models.py): hpvm loaded
with ``hpvm.frontend.torch.load``, onnxruntime from the file
``torch.onnx.export`` writes, its graph optimisations on (its convs then
carry their bias, activation and residual add, as hpvm's fused ones do).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.models_bench import MODEL_NAMES, hpvm_runner  # noqa: E402


def hpvm_layers(module, x: np.ndarray, threads: int, repeat: int):
    """(median call seconds, node -> median seconds) of hpvm's cpu target."""
    run, _, exe = hpvm_runner(module, "cpu", {"threads": threads}, x)
    for _ in range(5):
        run()
    calls, times = [], collections.defaultdict(list)
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        calls.append(time.perf_counter() - began)
        for record in exe.report().node_records:
            times[record.node].append(record.seconds)
    return float(np.median(calls)), {n: float(np.median(v)) for n, v in times.items()}


def onnxruntime_layers(proto, x: np.ndarray, threads: int, repeat: int, folder: Path):
    """(median call seconds, [(node, op type, median seconds)] in run order)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / "onnxruntime")
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    for _ in range(5):
        session.run(None, {name: x})
    calls = []
    for _ in range(repeat):
        began = time.perf_counter()
        session.run(None, {name: x})
        calls.append(time.perf_counter() - began)
    profile = Path(session.end_profiling())
    events = json.loads(profile.read_text())
    profile.unlink()
    durations, kinds = collections.defaultdict(list), {}
    suffix = "_kernel_time"
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith(suffix):
            node = event["name"][:-len(suffix)]
            durations[node].append(event["dur"] / 1e6)
            kinds[node] = event["args"].get("op_name")
    return float(np.median(calls)), [(n, kinds[n], float(np.median(d[-repeat:])))
                                     for n, d in durations.items()]


def conv_shapes(module) -> list[tuple[str, tuple, tuple, tuple, float]]:
    """hpvm's conv2d nodes in order: (name, x shape, w shape, stride, FLOPs)."""
    convs = []
    for node in module.root_graph.nodes:
        if getattr(node.body, "op", None) == "conv2d":
            shapes = {p.name: p.type.shape for p in node.body.params}
            flops = 2 * np.prod(shapes["y"]) * np.prod(shapes["w"][1:])
            convs.append((node.name, shapes["x"], shapes["w"],
                          tuple(node.body.attrs.get("stride", (1, 1))), float(flops)))
    return convs


def by_kind(seconds) -> str:
    """``(kind, seconds)`` pairs summed by kind, largest first."""
    totals = collections.defaultdict(float)
    for kind, value in seconds:
        totals[kind] += value
    return ", ".join(f"{k} {v * 1e3:.2f}" for k, v in sorted(totals.items(), key=lambda kv: -kv[1])
                     if v >= 1e-5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2", choices=MODEL_NAMES)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--top", type=int, default=15, help="convolutions listed")
    args = parser.parse_args(argv)

    import tempfile

    import torch
    from hpvm.frontend.onnx.testing import export
    from hpvm.frontend.torch import load

    from benchmarks.models import MODELS
    torch.set_num_threads(1)
    model, shape = MODELS[args.model]()
    x = np.random.default_rng(0).standard_normal((args.batch,) + shape).astype(np.float32)
    module = load(model, (torch.from_numpy(x),))
    call, nodes = hpvm_layers(module, x, args.threads, args.repeat)
    with tempfile.TemporaryDirectory() as folder:
        ort_call, ort_nodes = onnxruntime_layers(export(model, shape), x, args.threads,
                                                 args.repeat, Path(folder))
    print(f"{args.model}, batch {args.batch}, {args.threads} threads, median of {args.repeat}")
    print(f"hpvm: call {call * 1e3:.2f} ms, nodes {sum(nodes.values()) * 1e3:.2f} ms: "
          + by_kind((re.sub(r"_\d+$", "", n), s) for n, s in nodes.items()))
    print(f"onnxruntime: call {ort_call * 1e3:.2f} ms, nodes "
          f"{sum(s for *_, s in ort_nodes) * 1e3:.2f} ms: "
          + by_kind((kind, s) for _, kind, s in ort_nodes))
    convs = conv_shapes(module)
    ort_convs = [(n, s) for n, kind, s in ort_nodes if kind in ("Conv", "FusedConv")]
    if len(convs) != len(ort_convs):
        print(f"hpvm has {len(convs)} convolutions, onnxruntime {len(ort_convs)}: not paired")
        return 0
    rows = sorted(((nodes.get(name, 0.0) - theirs, name, xs, ws, stride, nodes.get(name, 0.0),
                    theirs, flops) for (name, xs, ws, stride, flops), (_, theirs)
                   in zip(convs, ort_convs)), reverse=True)
    print(f"convolutions: {sum(r[0] for r in rows) * 1e3:.2f} ms behind in all; the largest "
          "gaps (ms, GFLOP/s):")
    for gap, name, xs, ws, stride, ours, theirs, flops in rows[:args.top]:
        print(f"  {name:<10} x{tuple(xs)} w{tuple(ws)} stride {stride}: hpvm {ours * 1e3:.3f} "
              f"({flops / ours / 1e9:.0f}), onnxruntime {theirs * 1e3:.3f} "
              f"({flops / theirs / 1e9:.0f}), gap {gap * 1e3:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
