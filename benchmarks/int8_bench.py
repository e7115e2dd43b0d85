"""The INT8 knob on aten (CUDA): what a gemm node costs in FP32, FP16 and
INT8, as the aten device runs each, and why convolutions stay in float.

    python benchmarks/int8_bench.py [--repeat 50]

gemm: y = relu(a @ b^T + c), ``a`` f32 in device memory (a buffer's
type), ``b`` constant.  FP32 and FP16 run ``hpvm_aten.ops.gemm`` (FP16
casts ``a`` down first, as the device does); INT8 runs
``hpvm_aten.int8.integer_product``: quantise ``a`` (one fused kernel),
cuBLAS's integer GEMM, scale + bias + relu (one fused kernel); ``b`` is
quantised once, as the device caches it.  conv: a 3x3 convolution in
cuDNN FP32 and FP16 against the int8 route torch offers (im2col, then the
integer GEMM).  Times are medians of CUDA-synchronised loops, without
the host copies; the peer in the same run is FP16 (ratio = FP16 / INT8).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

GEMMS = [(8192, 4096, 4096), (16384, 1024, 1024), (2000, 4096, 1024), (4096, 1000, 10)]
CONVS = [(2000, 64, 64, 32), (2000, 128, 128, 16), (2000, 256, 256, 8)]
ATTRS = {"trans_a": False, "trans_b": True, "alpha": 1.0, "beta": 1.0, "activation": "relu"}


def median_ms(run, repeat: int) -> float:
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def gemm_row(m: int, k: int, n: int, repeat: int) -> str:
    from hpvm_aten import int8
    from hpvm_aten.ops import gemm
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(n, k, device="cuda") / k ** 0.5
    c = torch.randn(n, device="cuda")
    fp32 = median_ms(lambda: gemm({"a": a, "b": b, "c": c}, ATTRS, (m, n)), repeat)
    half_b, half_c = b.half(), c.half()
    fp16 = median_ms(lambda: gemm({"a": a.half(), "b": half_b, "c": half_c}, ATTRS,
                                  (m, n)).float(), repeat)
    scale_a, scale_b = float(a.abs().max()) / 127, float(b.abs().max()) / 127
    rhs = int8.integer_rhs(b, scale_b, True)
    factors = int8.integer_factors((scale_a, scale_b), ATTRS, "gemm", "cuda")
    quantised = median_ms(lambda: int8.integer_product("gemm", a, rhs, n, factors, ATTRS, c,
                                                       (m, n)), repeat)
    return (f"| gemm {m}x{k}x{n} | {fp32:.3f} | {fp16:.3f} | {quantised:.3f} | "
            f"{fp16 / quantised:.2f}x | {fp32 / quantised:.2f}x |")


def conv_row(n: int, c: int, o: int, h: int, repeat: int) -> str:
    x = torch.randn(n, c, h, h, device="cuda")
    w = torch.randn(o, c, 3, 3, device="cuda")
    fp32 = median_ms(lambda: F.conv2d(x, w, padding=1), repeat)
    half_x, half_w = x.half(), w.half()
    fp16 = median_ms(lambda: F.conv2d(half_x, half_w, padding=1), repeat)
    q = torch.randint(-127, 128, (n, c, h, h), dtype=torch.int8, device="cuda")
    columns = torch.randint(-127, 128, (o, 9 * c), dtype=torch.int8, device="cuda").t()

    def im2col_int8():
        padded = F.pad(q.permute(0, 2, 3, 1), (0, 0, 1, 1, 1, 1))
        s = padded.stride()
        patches = padded.as_strided((n, h, h, 3, 3, c), (s[0], s[1], s[2], s[1], s[2], s[3]))
        return torch._int_mm(patches.reshape(n * h * h, 9 * c), columns).float()
    quantised = median_ms(im2col_int8, repeat)
    return (f"| conv 3x3 {n}x{c}x{h}x{h} -> {o} | {fp32:.3f} | {fp16:.3f} | {quantised:.3f} | "
            f"{fp16 / quantised:.2f}x | {fp32 / quantised:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("int8_bench: needs a CUDA GPU (the integer GEMM is cuBLAS's)")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| node | FP32 ms | FP16 ms | INT8 ms | FP16 / INT8 | FP32 / INT8 |")
    print("|---|---|---|---|---|---|")
    for shape in GEMMS:
        print(gemm_row(*shape, args.repeat), flush=True)
    for shape in CONVS:
        print(conv_row(*shape, args.repeat), flush=True)


if __name__ == "__main__":
    main()
