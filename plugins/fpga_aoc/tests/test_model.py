"""The performance and area model on textbook cases (HPVM2FPGA's Eq. 1-6)."""
import pytest

from hpvm.ir.text import parse_module
from hpvm.target import NodeRef
from hpvm_fpga_aoc.estimate import estimate_program
from hpvm_fpga_aoc.model import kernel_report
from hpvm_fpga_aoc.profiles import PROFILES

PROFILE = PROFILES["arria10"]
BYTES_PER_CYCLE = PROFILE.bandwidth_gbs * 1e9 / (PROFILE.fmax_mhz * 1e6)
N = 4096


def module(body: str, params: str = "in x: f32[N], out y: f32[N]") -> str:
    return f"""hpvm 1.0
module m

func @k({params}) {{
{body}
}}

graph @g({params}) {{
  node k = @k
{chr(10).join(f"  in {p.split(':')[0].split()[-1]} -> k.{p.split(':')[0].split()[-1]}" for p in params.split(', ') if p.startswith('in'))}
{chr(10).join(f"  out k.{p.split(':')[0].split()[-1]} -> {p.split(':')[0].split()[-1]}" for p in params.split(', ') if p.startswith('out'))}
}}

root @g
"""


def report(text: str, n: int = N):
    return kernel_report(parse_module(text), "k", {"N": n}, PROFILE, BYTES_PER_CYCLE)


def loop(text: str, name: str = "k.i"):
    return next(l for l in report(text).loops if l.loop == name)


ACCUMULATE = "  for i in 0 .. N step 1{flags} {{\n    y[0] = y[0] + x[i]\n  }}"


def test_a_reduction_through_memory_has_a_long_ii_until_ivdep_removes_it():
    carried = loop(module(ACCUMULATE.format(flags=""), "in x: f32[N], inout y: f32[1]"))
    assert carried.ii > 100 and carried.limiter == "recurrence through y"
    promised = loop(module(ACCUMULATE.format(flags=" [ivdep]"), "in x: f32[N], inout y: f32[1]"))
    assert promised.ii == 1


def test_a_privatised_accumulator_carries_only_the_adders_latency():
    text = module("  let total: f32 = f32(0)\n  for i in 0 .. N step 1 {\n"
                  "    total = total + x[i]\n  }\n  y[0] = total",
                  "in x: f32[N], out y: f32[1]")
    private = loop(text)
    assert private.ii == PROFILE.operator("fadd").latency
    assert private.limiter == "recurrence through total"


SUM = ("  let total: f32 = f32({start})\n  for i in 0 .. N step 1{flags} {{\n"
       "    total = total + x[i]\n  }}\n  y[0] = total")


@pytest.mark.parametrize("profile, start, flags, ii", [
    ("arria10", 0, " [reduce total: add]", 1),   # the single-cycle accumulator
    ("arria10", 1, " [reduce total: add]", None),   # it starts at 0 only
    ("arria10", 0, "", None),                     # no promise: a plain recurrence
    ("stratix10", 0, " [reduce total: add]", None),   # no hardened accumulator there
])
def test_a_promised_float_sum_from_zero_uses_arria10s_single_cycle_accumulator(
        profile, start, flags, ii):
    chosen = PROFILES[profile]
    text = module(SUM.format(start=start, flags=flags), "in x: f32[N], out y: f32[1]")
    found = next(l for l in kernel_report(parse_module(text), "k", {"N": N}, chosen,
                                          BYTES_PER_CYCLE).loops if l.loop == "k.i")
    assert found.ii == (ii or chosen.operator("fadd").latency)


def test_an_integer_accumulator_pipelines_at_ii_1():
    text = module("  let total: i32 = i32(0)\n  for i in 0 .. N step 1 {\n"
                  "    total = total + x[i]\n  }\n  y[0] = total",
                  "in x: i32[N], out y: i32[1]")
    assert loop(text).ii == 1


INDEPENDENT = "  for i in 0 .. N step 1{flags} {{\n    y[i] = x[i] * f32(2)\n  }}"


def test_unrolling_an_independent_loop_by_4_divides_cycles_and_multiplies_area_by_about_4():
    plain = report(module(INDEPENDENT.format(flags="")), 16 * N)   # pipeline fill negligible
    unrolled = report(module(INDEPENDENT.format(flags=" [unroll = 4]")), 16 * N)
    assert plain.loops[0].form == unrolled.loops[0].form == "pipelined"
    assert plain.cycles / unrolled.cycles == pytest.approx(4, rel=0.1)
    assert unrolled.resources.alms / plain.resources.alms == pytest.approx(4, rel=0.1)
    assert unrolled.resources.dsps == 4 * plain.resources.dsps


def test_eq1_pipelined_cycles_are_trips_times_ii_plus_latency():
    l = loop(module(INDEPENDENT.format(flags="")))
    assert l.cycles == (N - 1) * l.ii + l.latency


def test_a_loop_around_a_loop_is_serial_until_the_inner_one_is_unrolled():
    body = ("  for i in 0 .. N step 1 [ivdep] {{\n    let t: f32 = f32(0)\n"
            "    for j in 0 .. 4 step 1{flags} {{\n      t = t + x[i] * f32(3)\n    }}\n"
            "    y[i] = t\n  }}")
    serial = loop(module(body.format(flags="")))
    assert serial.form == "serial" and serial.cycles == N * serial.latency
    pipelined = loop(module(body.format(flags=" [unroll = 4]")))
    assert pipelined.form == "pipelined"
    assert pipelined.cycles < serial.cycles / 10


def test_an_unroll_that_overflows_the_device_is_infeasible():
    text = module("  for i in 0 .. N step 1 [ivdep, unroll = 4096] {\n"
                  "    y[i] = exp(x[i]) / sqrt(x[i])\n  }")
    m = parse_module(text)
    result = estimate_program(m, [NodeRef("g", "k")], {NodeRef("g", "k"): {"N": N}}, PROFILE)
    assert result["feasible"] is False and "does not fit" in result["reason"]
    small = estimate_program(parse_module(module(INDEPENDENT.format(flags=""))),
                             [NodeRef("g", "k")], {NodeRef("g", "k"): {"N": N}}, PROFILE)
    assert small["feasible"] is True and small["utilisation"] < 0.5


def test_fmax_falls_as_the_device_fills():
    assert PROFILE.fmax(0.1) == PROFILE.fmax_mhz
    assert PROFILE.fmax(0.6) < PROFILE.fmax(0.4) < PROFILE.fmax_mhz
    assert PROFILE.fmax(1.0) == PROFILE.fmax_full_mhz


def test_memory_bandwidth_limits_a_wide_unroll():
    l = loop(module(INDEPENDENT.format(flags=" [unroll = 64]")))
    assert l.limiter == "memory bandwidth" and l.ii == -(-64 * 8 // BYTES_PER_CYCLE)


def test_an_unknown_trip_count_is_a_clear_error_and_a_hint_fixes_it():
    from hpvm.errors import TargetError
    text = module(INDEPENDENT.format(flags=""))
    with pytest.raises(TargetError, match="trip_count"):
        kernel_report(parse_module(text), "k", {}, PROFILE, BYTES_PER_CYCLE)
    hinted = module(INDEPENDENT.format(flags=" [trip_count = 100]"))
    report_ = kernel_report(parse_module(hinted), "k", {}, PROFILE, BYTES_PER_CYCLE)
    assert report_.loops[0].trip_count == 100


TWO_NODES = """hpvm 1.0
module m

func @k(in x: f32[N], out y: f32[N]) {
  for i in 0 .. N step 1 {
    y[i] = x[i] * f32(2)
  }
}

graph @g(in a: f32[N], in b: f32[N], out c: f32[N], out d: f32[N]) {
  node p = @k
  node q = @k
  in a -> p.x
  in b -> q.x
  out p.y -> c
  out q.y -> d
}

root @g
"""


def test_eq5_task_parallelism_overlaps_independent_nodes():
    m = parse_module(TWO_NODES)
    nodes = [NodeRef("g", "p"), NodeRef("g", "q")]
    sizes = {ref: {"N": N} for ref in nodes}
    parallel = estimate_program(m, nodes, sizes, PROFILE, task_parallelism=True)
    serial = estimate_program(m, nodes, sizes, PROFILE, task_parallelism=False)
    assert serial["seconds"] == pytest.approx(2 * parallel["seconds"])
