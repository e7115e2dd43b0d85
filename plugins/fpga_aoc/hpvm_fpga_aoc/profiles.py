"""Device profiles of the performance and resource model: capacity, clock,
memory bandwidth, and what each operation costs in latency and area.

Capacities are the devices' data-sheet figures (Intel Arria 10 GX 1150,
Stratix 10 GX 2800).  Latencies and areas are those AOC's reports show for
32-bit operations on Arria 10 (hardened single-precision DSPs: a float add
or multiply is one DSP block and ~3 cycles); doubles are built from soft
logic and cost much more.  Stratix 10 runs the same operators at a higher
clock with deeper pipelines (HyperFlex registers), modelled by its own
latency scale.  The board support package (BSP) of an OpenCL board takes a
share of the device before any kernel; ``static`` is that share.

These are a model, not a synthesis: where ``aoc -rtl`` reports exist the
target reads II, latency, Fmax and area from them instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Resources:
    """FPGA area: adaptive logic modules, registers, M20K RAM blocks, DSPs."""

    alms: float = 0.0
    registers: float = 0.0
    m20k: float = 0.0
    dsps: float = 0.0

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(self.alms + other.alms, self.registers + other.registers,
                         self.m20k + other.m20k, self.dsps + other.dsps)

    def __mul__(self, factor: float) -> "Resources":
        return Resources(self.alms * factor, self.registers * factor, self.m20k * factor,
                         self.dsps * factor)

    __rmul__ = __mul__

    def as_dict(self) -> dict[str, float]:
        return {"alms": round(self.alms), "registers": round(self.registers),
                "m20k": round(self.m20k), "dsps": round(self.dsps)}


@dataclass(frozen=True)
class Operator:
    """One operator's pipeline latency (cycles) and area."""

    latency: int
    area: Resources


def _op(latency, alms, registers, m20k=0, dsps=0) -> Operator:
    return Operator(latency, Resources(alms, registers, m20k, dsps))


ARRIA10_OPERATORS = {
    "int_add": _op(1, 16, 32), "logic": _op(1, 16, 32), "compare": _op(1, 16, 33),
    "select": _op(1, 16, 32), "int_mul": _op(3, 10, 64, dsps=2),
    "int_div": _op(34, 1200, 2400), "convert": _op(3, 60, 160),
    "fadd": _op(3, 20, 96, dsps=1), "fmul": _op(3, 10, 96, dsps=1),
    "fdiv": _op(14, 350, 900, dsps=4), "sqrt": _op(18, 300, 700, dsps=2),
    "exp": _op(19, 500, 1100, 2, 5), "log": _op(21, 600, 1200, 2, 4),
    "sin": _op(38, 1100, 2300, 3, 8), "cos": _op(38, 1100, 2300, 3, 8),
    "tanh": _op(40, 1300, 2600, 3, 8), "pow": _op(45, 1800, 3500, 4, 12),
    "fminmax": _op(1, 40, 64),
    "dadd": _op(12, 800, 1700), "dmul": _op(10, 250, 700, dsps=4),
    "ddiv": _op(45, 2400, 5000, dsps=8), "dmath": _op(60, 3000, 6000, 6, 16),
    # memory: a burst-coalesced load/store unit per global access site,
    # on-chip RAM ports for local/private arrays
    "load_global": _op(160, 1300, 2800, 10), "store_global": _op(2, 700, 1500, 4),
    "atomic_global": _op(200, 1800, 3800, 10),
    "load_local": _op(3, 40, 100), "store_local": _op(1, 30, 80),
    "loop": _op(2, 100, 200),
}
"""Operators on Arria 10 (cycles, ALMs, registers, M20Ks, DSPs)."""


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    description: str
    capacity: Resources
    static: Resources
    """The board support package's share, used before any kernel."""
    fmax_mhz: float
    """Kernel clock of a lightly filled device."""
    fmax_full_mhz: float
    """Kernel clock when the fullest resource is at 100%."""
    bandwidth_gbs: float
    """Global (DDR) memory bandwidth of the reference board."""
    latency_scale: float = 1.0
    operators: dict = field(default_factory=lambda: dict(ARRIA10_OPERATORS))
    single_cycle_accumulator: bool = False
    """A hardened float accumulator (Arria 10): a float sum from 0 in a
    loop costs no recurrence (Intel's programming guide, 'Single-Cycle
    Floating-Point Accumulator for Single Work-Item Kernels')."""

    def operator(self, name: str) -> Operator:
        op = self.operators[name]
        if self.latency_scale == 1.0:
            return op
        return Operator(max(1, round(op.latency * self.latency_scale)), op.area)

    def fmax(self, utilisation: float) -> float:
        """The clock (MHz) at a utilisation (the fullest resource's share):
        flat up to 25%, then falling linearly to ``fmax_full_mhz`` at 100%
        (routing congestion lengthens the critical path)."""
        crowding = min(max((utilisation - 0.25) / 0.75, 0.0), 1.0)
        return self.fmax_mhz - (self.fmax_mhz - self.fmax_full_mhz) * crowding


PROFILES = {
    "arria10": DeviceProfile(
        "arria10", "Intel Arria 10 GX 1150 (reference board: 2 banks of DDR4-2133)",
        capacity=Resources(427_200, 1_708_800, 2_713, 1_518),
        static=Resources(64_000, 170_000, 350, 0),
        fmax_mhz=300.0, fmax_full_mhz=170.0, bandwidth_gbs=34.1, single_cycle_accumulator=True),
    "stratix10": DeviceProfile(
        "stratix10", "Intel Stratix 10 GX 2800 (reference board: 4 banks of DDR4-2400)",
        capacity=Resources(933_120, 3_732_480, 11_721, 5_760),
        static=Resources(120_000, 360_000, 900, 0),
        fmax_mhz=450.0, fmax_full_mhz=240.0, bandwidth_gbs=76.8, latency_scale=1.5),
}
DEFAULT_PROFILE = "arria10"
KERNEL_LAUNCH_SECONDS = 20e-6
"""Host-side cost of one kernel launch through the Intel FPGA OpenCL runtime."""
