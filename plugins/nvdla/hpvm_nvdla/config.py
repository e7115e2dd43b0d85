"""NVDLA hardware configurations (the open-source nv_full and nv_small).

``atomic_c`` x ``atomic_k`` INT8 multiply-accumulators in CMAC (nv_full:
64 x 32 = 2048 MACs per cycle, half as many in FP16; nv_small: 8 x 8, INT8
only); ``atom_bytes``: the feature-data atom (32 bytes on nv_full, 8 on
nv_small); SDP, PDP and CDP throughputs in elements per cycle; the clock and
the memory bandwidth the cost model assumes (``bandwidth_gbs`` and
``clock_mhz`` options override them).
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Config:
    name: str
    atomic_c: int
    atomic_k: int
    atom_bytes: int
    fp16: bool
    sdp_throughput: int
    pdp_throughput: int
    cdp_throughput: int
    clock_mhz: float
    bandwidth_gbs: float
    layer_overhead_cycles: int = 400
    """Programming the engines' registers and the interrupt per layer."""

    def macs_per_cycle(self, precision: str) -> int:
        full = self.atomic_c * self.atomic_k
        return full // 2 if precision == "fp16" else full

    def with_options(self, options: dict) -> "Config":
        changes = {key: float(options[key]) for key in ("clock_mhz", "bandwidth_gbs")
                   if options.get(key) is not None}
        return replace(self, **changes)


CONFIGS = {
    "nv_full": Config("nv_full", 64, 32, 32, True, 16, 8, 8, 1000.0, 25.6),
    "nv_small": Config("nv_small", 8, 8, 8, False, 1, 1, 1, 1000.0, 6.4),
}
