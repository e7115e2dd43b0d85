"""The gpu_opencl target against hand-written OpenCL C and PyTorch on the
same GPU, in the same run: sgemm, the two-pass blur, the 7-node edge
pipeline, and the small examples.

    python benchmarks/gpu_opencl_bench.py [--repeat 20] [--small] [--device NAME]

hpvm's kernels are timed device-resident (the executable's own Device,
inputs already on the GPU, every node launched in graph order, the time of
the whole graph) and end to end (``exe(**inputs)``: host copies in and out
included).  Hand-written OpenCL (benchmarks/gpu_opencl_reference.cl) runs
on the same context and queue; PyTorch (CUDA) on the same GPU when present.
Each runs once to warm up, then ``--repeat`` times: the median is reported.
Ratios are the peer's time over hpvm's (above 1: hpvm is faster).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def get_target_registry():
    """The registry, with hpvm-gpu-opencl registered by hand when it is not
    installed (a bare device machine: sources on PYTHONPATH)."""
    from hpvm.registry import Registry, get_registry
    registry = get_registry()
    try:
        registry.target("gpu_opencl")
        return registry
    except Exception:  # not installed as a distribution
        import hpvm_gpu_opencl.plugin as plugin
        registry = Registry(entry_points=[])
        registry.register(plugin, name="gpu_opencl")
        return registry


def median_seconds(run, finish, repeat: int) -> float:
    run()
    finish()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        finish()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


class HpvmRun:
    """A compiled program and a device-resident way to run its root graph."""

    def __init__(self, program, inputs: dict, options: dict, registry):
        import hpvm.runtime as rt
        from hpvm.ir.shapes import bind_symbols, output_shape
        from hpvm.errors import Location
        from hpvm.target import NodeRef
        self.inputs = inputs
        self.exe = rt.compile(program, targets=["gpu_opencl"], options=options, registry=registry)
        target = registry.target("gpu_opencl").target
        self.device = target.load(self.exe.artifacts["gpu_opencl"], options)
        module = self.device.module
        graph = module.root_graph
        values = {}
        for name, value in inputs.items():
            if isinstance(value, np.ndarray) and value.ndim:
                values[name] = self.device.allocate(value.shape, value.dtype)
                self.device.copy_in(values[name], value)
            else:
                values[name] = value
        self.launches = []
        for node in graph.nodes:  # front ends and examples list nodes in dependency order
            params = module.node_params(node)
            args = {}
            for b in graph.bind_ins:
                if b.dst_node == node.name:
                    args[b.dst_port] = values[b.param]
            for e in graph.edges:
                if e.dst_node == node.name:
                    args[e.dst_port] = values[(e.src_node, e.src_port)]
            symbols = bind_symbols(params, args, None)
            for p in params:
                if p.direction == "out":
                    shape = output_shape(p, symbols, Location(graph=graph.name, node=node.name))
                    args[p.name] = values[(node.name, p.name)] = self.device.allocate(
                        shape, p.type.element.numpy_dtype)
            self.launches.append((NodeRef(graph.name, node.name), args))
        self.outputs = {b.param: values[(b.src_node, b.src_port)] for b in graph.bind_outs}

    def run(self):
        for ref, args in self.launches:
            event = self.device.launch(ref, args)
        self.device.wait(event)

    def finish(self):
        self.device.finish()

    def per_node(self, repeat: int) -> list[tuple[str, float]]:
        """Each node launched and waited for alone: (node, median s)."""
        return [(ref.node, median_seconds(lambda: self.device.launch(ref, args), self.finish,
                                          repeat)) for ref, args in self.launches]

    def result(self, name: str) -> np.ndarray:
        return self.device.copy_out(self.outputs[name])

    def end_to_end(self):
        return self.exe(**self.inputs)


class HandOpenCL:
    """The hand-written kernels on the same context and queue as hpvm."""

    def __init__(self, runtime):
        import pyopencl as cl
        self.cl, self.runtime = cl, runtime
        source = (ROOT / "benchmarks" / "gpu_opencl_reference.cl").read_text()
        self.program = cl.Program(runtime.context, source).build()
        self.kernels = {}

    def buffer(self, array=None, nbytes: int = 0):
        flags = self.cl.mem_flags
        if array is not None:
            return self.cl.Buffer(self.runtime.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                  hostbuf=np.ascontiguousarray(array))
        return self.cl.Buffer(self.runtime.context, flags.READ_WRITE, nbytes)

    def launch(self, name, global_size, local_size, *args):
        kernel = self.kernels.get(name) or self.kernels.setdefault(
            name, self.cl.Kernel(self.program, name))
        kernel.set_args(*args)
        self.cl.enqueue_nd_range_kernel(self.runtime.queue, kernel, global_size, local_size)

    def read(self, buffer, shape) -> np.ndarray:
        out = np.empty(shape, np.float32)
        self.cl.enqueue_copy(self.runtime.queue, out, buffer)
        return out

    def finish(self):
        self.runtime.queue.finish()


def torch_device():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


PER_NODE = False
"""--per-node: edges also prints each node's time alone."""


def relative_error(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


TILED_DEFAULT = ("node-fusion,parallel-reduce{form=chunks lanes=65536 layout=strided grain=256},"
                 "parallel-reduce,tile,dce")
"""gpu_opencl's default pipeline on a GPU with the tile pass added."""


# ------------------------------------------------------------------ workloads
def sgemm(size, hand, torch, registry, options, repeat):
    from hpvm.ir.text import load_module
    m = n = k = size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    reference = a.astype(np.float64) @ b
    work = 2.0 * m * n * k
    rows = []
    module = load_module(ROOT / "examples" / "ir" / "matmul.hpvm")
    for variant in ({"work_group": None}, {"work_group": (16, 16)}, {"pipeline": "tile"},
                    {"pipeline": "tile{size=32}"}):
        run = HpvmRun(module, {"a": a, "b": b}, {**options, **variant}, registry)
        t = median_seconds(run.run, run.finish, repeat)
        error = relative_error(run.result("c"), reference)
        rows.append((f"hpvm gpu_opencl {variant}", t, work / t / 1e9, "GFLOP/s", error))
    run = HpvmRun(module, {"a": a, "b": b}, options, registry)
    ends = median_seconds(run.end_to_end, lambda: None, max(3, repeat // 4))
    rows.append(("hpvm gpu_opencl end to end (copies in/out)", ends, work / ends / 1e9, "GFLOP/s", None))
    da, db, dc = hand.buffer(a), hand.buffer(b), hand.buffer(nbytes=m * n * 4)
    sizes = (np.int32(m), np.int32(n), np.int32(k))
    for name, local in (("sgemm_naive", None), ("sgemm_tiled", (16, 16))):
        padded = (-(-n // 16) * 16, -(-m // 16) * 16)
        t = median_seconds(lambda: hand.launch(name, padded, local, da, db, dc, *sizes),
                           hand.finish, repeat)
        rows.append((f"hand OpenCL {name}", t, work / t / 1e9, "GFLOP/s",
                     relative_error(hand.read(dc, (m, n)), reference)))
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        t = median_seconds(lambda: torch.matmul(ta, tb), torch.cuda.synchronize, repeat)
        rows.append(("PyTorch torch.matmul (cuBLAS, fp32, no tf32)", t, work / t / 1e9, "GFLOP/s",
                     relative_error(torch.matmul(ta, tb).cpu().numpy(), reference)))
    return f"sgemm {m}x{n}x{k} f32", rows


def blur(size, hand, torch, registry, options, repeat):
    from hpvm.ir.text import load_module
    h = w = size
    img = np.random.default_rng(1).random((h, w), dtype=np.float32)
    module = load_module(ROOT / "examples" / "ir" / "blur.hpvm")
    traffic = 2 * 2 * 4.0 * h * w  # two passes, each reads and writes the image once
    run = HpvmRun(module, {"image": img}, options, registry)
    t = median_seconds(run.run, run.finish, repeat)
    reference = run.result("blurred")
    rows = [("hpvm gpu_opencl (2 nodes)", t, traffic / t / 1e9, "GB/s", 0.0)]
    for variant in ({"work_group": (8, 32)}, {"fast_math": True}, {"pipeline": "tile"},
                    {"pipeline": "tile{size=32}"}):
        other = HpvmRun(module, {"image": img}, {**options, **variant}, registry)
        t = median_seconds(other.run, other.finish, repeat)
        rows.append((f"hpvm gpu_opencl {variant}", t, traffic / t / 1e9, "GB/s",
                     relative_error(other.result("blurred"), reference)))
    for transfer in ("copy", "map", "pinned"):
        other = HpvmRun(module, {"image": img}, {**options, "transfer": transfer}, registry)
        ends = median_seconds(other.end_to_end, lambda: None, max(3, repeat // 4))
        rows.append((f"hpvm gpu_opencl end to end, transfer={transfer} ({img.nbytes >> 20} MiB in and out)",
                     ends, traffic / ends / 1e9, "GB/s", None))
    src, tmp, dst = hand.buffer(img), hand.buffer(nbytes=img.nbytes), hand.buffer(nbytes=img.nbytes)
    dims = (np.int32(h), np.int32(w))

    def hand_blur():
        hand.launch("blur_rows", (w, h), None, src, tmp, *dims)
        hand.launch("blur_columns", (w, h), None, tmp, dst, *dims)
    t = median_seconds(hand_blur, hand.finish, repeat)
    rows.append(("hand OpenCL (2 kernels)", t, traffic / t / 1e9, "GB/s",
                 relative_error(hand.read(dst, (h, w)), reference)))
    if torch is not None:
        timg = torch.from_numpy(img).cuda()

        def torch_blur(image):
            pad = torch.nn.functional.pad
            x = pad(image[None, None], (1, 1, 0, 0), mode="replicate")[0, 0]
            rows_ = (x[:, :-2] + x[:, 1:-1] + x[:, 2:]) / 3
            y = pad(rows_[None, None], (0, 0, 1, 1), mode="replicate")[0, 0]
            return (y[:-2] + y[1:-1] + y[2:]) / 3
        t = median_seconds(lambda: torch_blur(timg), torch.cuda.synchronize, repeat)
        rows.append(("PyTorch (pad + slices)", t, traffic / t / 1e9, "GB/s",
                     relative_error(torch_blur(timg).cpu().numpy(), reference)))
        t = median_seconds(lambda: torch_blur(torch.from_numpy(img).cuda()).cpu().numpy(),
                           torch.cuda.synchronize, max(3, repeat // 4))
        rows.append(("PyTorch end to end (pageable .cuda() / .cpu())", t, traffic / t / 1e9,
                     "GB/s", None))
    return f"blur 3x3 (two passes) {h}x{w} f32", rows


def edges(size, hand, torch, registry, options, repeat):
    from hpvm.demo.edge_detection import edge_detect
    h = w = size
    img = np.random.default_rng(2).random((h, w), dtype=np.float32)
    threshold = np.float32(0.3)
    traffic = 11 * 4.0 * h * w  # each stage reads its inputs and writes its output once
    inputs = {"img": img, "threshold": threshold}
    run = HpvmRun(edge_detect, inputs, options, registry)
    t = median_seconds(run.run, run.finish, repeat)
    reference = run.result("edges")
    rows = [("hpvm gpu_opencl (7 nodes as written)", t, traffic / t / 1e9, "GB/s", 0.0)]
    for pipeline in ("parallel-reduce", "node-fusion,dce", "default", "tile", TILED_DEFAULT):
        other = HpvmRun(edge_detect, inputs, {**options, "pipeline": pipeline}, registry)
        t = median_seconds(other.run, other.finish, repeat)
        rows.append((f"hpvm gpu_opencl, pipeline={pipeline}", t, traffic / t / 1e9, "GB/s",
                     float((other.result("edges") != reference).mean())))
        if PER_NODE:
            print(f"per node, pipeline={pipeline}: " + ", ".join(
                f"{node} {seconds * 1e3:.3f} ms" for node, seconds in other.per_node(repeat)))
    ends = median_seconds(run.end_to_end, lambda: None, max(3, repeat // 4))
    rows.append(("hpvm gpu_opencl end to end (copies in/out)", ends, traffic / ends / 1e9, "GB/s", None))
    n = h * w
    src = hand.buffer(img)
    smooth, gx, gy, mag, out = (hand.buffer(nbytes=n * 4) for _ in range(5))
    row_max, peak = hand.buffer(nbytes=h * 4), hand.buffer(nbytes=4)
    dims = (np.int32(h), np.int32(w))

    def hand_edges():
        hand.launch("edge_gaussian", (w, h), None, src, smooth, *dims)
        hand.launch("edge_sobel", (w, h), None, smooth, gx, gy, *dims)
        hand.launch("edge_magnitude", (n,), None, gx, gy, mag, np.int32(n))
        hand.launch("edge_row_max", (256 * h,), (256,), mag, row_max, np.int32(w))
        hand.launch("edge_max", (256,), (256,), row_max, peak, np.int32(h))
        hand.launch("edge_threshold", (n,), None, mag, peak, out, threshold, np.int32(n))
    t = median_seconds(hand_edges, hand.finish, repeat)
    mismatch = float((hand.read(out, (h, w)) != reference).mean())
    rows.append(("hand OpenCL (6 kernels, tree reductions)", t, traffic / t / 1e9, "GB/s", mismatch))
    if torch is not None:
        F = torch.nn.functional
        timg = torch.from_numpy(img).cuda()[None, None]
        kernels = torch.tensor([[[1, 2, 1], [2, 4, 2], [1, 2, 1]]], dtype=torch.float32) / 16
        sobel = torch.tensor([[[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]],
                              [[-1, -2, -1], [0, 0, 0], [1, 2, 1]]], dtype=torch.float32)
        gauss_w, sobel_w = kernels[:, None].cuda(), sobel[:, None].cuda()

        def torch_edges():
            smooth_ = F.conv2d(F.pad(timg, (1, 1, 1, 1), mode="replicate"), gauss_w)
            g = F.conv2d(F.pad(smooth_, (1, 1, 1, 1), mode="replicate"), sobel_w)
            mag_ = torch.sqrt(g[:, :1] ** 2 + g[:, 1:] ** 2)
            top = mag_.amax()
            return (mag_ / torch.where(top > 0, top, 1.0) > threshold).float()[0, 0]
        t = median_seconds(torch_edges, torch.cuda.synchronize, repeat)
        mismatch = float((torch_edges().cpu().numpy() != reference).mean())
        rows.append(("PyTorch (conv2d + amax)", t, traffic / t / 1e9, "GB/s", mismatch))
    return f"edge pipeline {h}x{w} f32 (last column: fraction of differing pixels)", rows


def small_examples(hand, torch, registry, options, repeat):
    """The remaining examples end to end (tiny: launch and copy overhead)."""
    from hpvm.ir.text import load_module
    from hpvm.testing import random_inputs
    rows = []
    for name, sizes in (("hierarchy", {"N": 1 << 20}), ("lenet_tiny", {"N": 64})):
        module = load_module(ROOT / "examples" / "ir" / f"{name}.hpvm")
        inputs = random_inputs(module.root_graph, sizes)
        import hpvm.runtime as rt
        exe = rt.compile(module, targets=["gpu_opencl"], options=options, registry=registry)
        t = median_seconds(lambda: exe(**inputs), lambda: None, repeat)
        rows.append((f"{name} {sizes} end to end", t, exe.report().bytes_copied / t / 1e9,
                     "GB/s copied", None))
    return "small examples (hpvm gpu_opencl only)", rows


def print_table(title: str, rows) -> None:
    print(f"\n### {title}\n")
    print("| implementation | median ms | rate | ratio (peer / hpvm) | rel. error vs hpvm or ref |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base = rows[0][1]
    for label, seconds, rate, unit, error in rows:
        err = "" if error is None else f"{error:.1e}"
        print(f"| {label} | {seconds * 1e3:.3f} | {rate:.1f} {unit} | {seconds / base:.2f} | {err} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--small", action="store_true", help="small sizes (CPU OpenCL check)")
    parser.add_argument("--platform", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--workloads", default="sgemm,blur,edges,small",
                        help="comma-separated subset of sgemm,blur,edges,small")
    parser.add_argument("--per-node", action="store_true",
                        help="edges: also time each node alone per pipeline")
    args = parser.parse_args()
    chosen = args.workloads.split(",")
    global PER_NODE
    PER_NODE = args.per_node
    options = {k: v for k, v in (("platform", args.platform), ("device", args.device)) if v}
    from hpvm_opencl.devices import runtime_for, select_device
    runtime = runtime_for(select_device(options))
    print(f"device: {runtime.info.describe()}, driver {runtime.info.driver}")
    registry = get_target_registry()
    hand, torch = HandOpenCL(runtime), torch_device()
    if torch is not None:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    sizes = (128, 256, 256) if args.small else (2048, 8192, 4096)
    for workload, size in zip((sgemm, blur, edges), sizes):
        if workload.__name__ in chosen:
            print_table(*workload(size, hand, torch, registry, options, args.repeat))
    if "small" in chosen:
        print_table(*small_examples(hand, torch, registry, options, max(3, args.repeat // 4)))


if __name__ == "__main__":
    main()
