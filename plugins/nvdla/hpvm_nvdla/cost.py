"""The cycle model behind ``Target.estimate`` and the emulator's timings.

Per hardware layer, per image: the convolution core takes
``R * S * outH * outW * ceil(C/aC) * ceil(K/aK)`` cycles per group (a
cycle feeds one atomic-C x atomic-K block of MACs; FP16 halves atomic-K on
nv_full); SDP, PDP and CDP stream their elements at their throughput; memory
traffic (input and second-operand surfaces read, weights read once per
launch, the output surface written) moves at the configured bandwidth.
A layer takes the larger of compute and memory time, plus a fixed cost to
program it; layers run one after another.
"""
from __future__ import annotations

import math

from .config import Config
from .layers import Layer


def layer_cycles(layer: Layer, batch: int, shapes: dict, precision: str,
                 config: Config) -> dict:
    """Compute cycles, memory bytes and MACs of ``layer`` for ``batch`` images;
    ``shapes``: value -> per-image shape (C, H, W)."""
    element = 1 if precision == "int8" else 2
    atomic_k = config.atomic_k // (2 if precision == "fp16" else 1)
    out = tuple(layer.shape[1:])
    out_elements = math.prod(out)
    reads = sum(math.prod(shapes[v]) for v in layer.inputs) * element * batch
    writes = out_elements * element * batch
    weights = layer.weight.size * element if layer.weight is not None else 0
    macs = compute = 0
    if layer.kind in ("conv", "fc"):
        if layer.kind == "conv":
            kernels, per_group, rows, cols = layer.weight.shape
            groups = layer.attrs["groups"]
            out_h, out_w = out[1], out[2]
        else:
            (kernels, per_group), rows, cols, groups, out_h, out_w = layer.weight.shape, 1, 1, 1, 1, 1
        blocks = math.ceil(per_group / config.atomic_c) * math.ceil(kernels // groups / atomic_k)
        compute = groups * rows * cols * out_h * out_w * blocks * batch
        macs = kernels * per_group * rows * cols * out_h * out_w * batch
    if layer.kind == "sdp" or layer.steps:
        compute = max(compute, math.ceil(out_elements * batch / config.sdp_throughput))
    if layer.kind == "pdp":
        compute = math.ceil(math.prod(shapes[layer.inputs[0]]) * batch / config.pdp_throughput)
    if layer.kind == "cdp":
        compute = math.ceil(out_elements * batch / config.cdp_throughput)
    if layer.kind == "concat":
        reads = writes = 0  # the producers wrote into slices of one surface
    if layer.kind == "slice":
        per_atom = config.atom_bytes // element
        if layer.attrs["channels"][0] % per_atom == 0:
            reads = writes = 0  # an atom-aligned sub-surface: its readers read in place
    bytes_per_cycle = config.bandwidth_gbs * 1e9 / (config.clock_mhz * 1e6)
    memory = math.ceil((reads + writes + weights) / bytes_per_cycle)
    cycles = max(compute, memory) + config.layer_overhead_cycles
    return {"cycles": cycles, "compute_cycles": compute, "memory_cycles": memory,
            "bytes": reads + writes + weights, "macs": macs}


def estimate(layers: list[Layer], batch: int, inputs: dict, precision: str,
             config: Config) -> dict:
    """Totals over ``layers`` for ``batch`` images; ``inputs``: each input
    value's per-image shape."""
    shapes = dict(inputs)
    for layer in layers:
        shapes[layer.output] = tuple(layer.shape[1:])
    totals = {"cycles": 0, "compute_cycles": 0, "memory_cycles": 0, "bytes": 0, "macs": 0}
    for layer in layers:
        for key, value in layer_cycles(layer, batch, shapes, precision, config).items():
            totals[key] += value
    totals["seconds"] = totals["cycles"] / (config.clock_mhz * 1e6)
    totals["layers"] = len(layers)
    return totals
