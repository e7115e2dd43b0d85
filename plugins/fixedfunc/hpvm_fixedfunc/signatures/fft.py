"""Radix-2 FFT: iterative butterflies with twiddle factors, in place or out
of place, decimation in frequency or in time, one node or a chain of stage
nodes.

Structure: a butterfly on complex values held as separate real and
imaginary buffers.  Decimation in frequency (MachSuite's form):

    even' = even + odd          odd' = (even - odd) * w

decimation in time:

    t = odd * w                 even' = even + t        odd' = even - t

with ``w`` the twiddle (loaded from a table or computed).  Binding: the
real and imaginary buffers (rank 1, or rank 2 for a batch of signals along
the last axis), the buffers written, and the twiddle tables when ``w`` is
loaded.  Conventions (the probe picks one): input and output in natural
or bit-reversed order, forward or inverse transform.  Probe: 16 and 64
points (at most 2^S for a chain of S stage nodes; the declared length when it
is a number), twiddle tables ``w[k] = exp(-2 pi i k / N)`` (their length the
table's own symbol, N / 2 when it differs from the signal's).

A chain of S stage nodes transforms at most 2^S points; the accelerator
refuses larger signals, and signals whose length is not a power of two.
Twiddle tables are the accelerator's own: a table other than the forward
or inverse one is refused at run time.
"""
from __future__ import annotations

import numpy as np

from hpvm.passes.pdg import ProgramDependenceGraph
from hpvm.passes.value_ranges import UNIT, difference
from hpvm.passes.pdg_match import Pattern

from .base import Binding, Refusal, Signature, array_of, require_floats, symbol_sizes

ORDERS = ("natural", "bit-reversed")


def _loads(pattern: Pattern) -> dict[str, int]:
    return {f"{part}_{lane}": pattern.load(f"load of the {part} input's {lane} part", role=f"{part}_{lane}")
            for part in ("even", "odd") for lane in ("re", "im")}


def _twiddle(pattern: Pattern) -> tuple[int, int]:
    return (pattern.any("f", "twiddle (real part)", role="w_re"),
            pattern.any("f", "twiddle (imaginary part)", role="w_im"))


def _complex_product(pattern: Pattern, x_re: int, x_im: int, w_re: int, w_im: int, what: str):
    """(x_re * w_re - x_im * w_im, x_re * w_im + x_im * w_re)."""
    def product(x: int, w: int, parts: str) -> int:
        return pattern.op("mul", x, w, description=f"product {parts} of {what} and the twiddle")

    negated = pattern.op("neg", product(x_im, w_im, "im*wi"),
                         description=f"negated product -(im*wi) of {what} and the twiddle")
    real = pattern.op("add", product(x_re, w_re, "re*wr"), negated,
                      description=f"real part of {what} times the twiddle (re*wr - im*wi)")
    imag = pattern.op("add", product(x_re, w_im, "re*wi"), product(x_im, w_re, "im*wr"),
                      description=f"imaginary part of {what} times the twiddle (re*wi + im*wr)")
    return real, imag


def decimation_in_frequency() -> Pattern:
    p = Pattern("fft butterfly, decimation in frequency")
    loads = _loads(p)
    for lane in ("re", "im"):
        total = p.op("add", loads[f"even_{lane}"], loads[f"odd_{lane}"],
                     description=f"sum even + odd ({lane} part)")
        p.store(total, f"store of the sum ({lane} part)", role=f"sum_{lane}")
    difference = {lane: p.op("add", loads[f"even_{lane}"],
                             p.op("neg", loads[f"odd_{lane}"], description=f"negated odd input ({lane} part)"),
                             description=f"difference even - odd ({lane} part)")
                  for lane in ("re", "im")}
    w_re, w_im = _twiddle(p)
    real, imag = _complex_product(p, difference["re"], difference["im"], w_re, w_im, "the difference")
    p.store(real, "store of the twiddled difference (re part)", role="difference_re")
    p.store(imag, "store of the twiddled difference (im part)", role="difference_im")
    return p


def decimation_in_time() -> Pattern:
    p = Pattern("fft butterfly, decimation in time")
    loads = _loads(p)
    w_re, w_im = _twiddle(p)
    twiddled = dict(zip(("re", "im"), _complex_product(p, loads["odd_re"], loads["odd_im"], w_re, w_im,
                                                       "the odd input")))
    for lane in ("re", "im"):
        total = p.op("add", loads[f"even_{lane}"], twiddled[lane],
                     description=f"sum even + twiddled odd ({lane} part)")
        p.store(total, f"store of the sum ({lane} part)", role=f"sum_{lane}")
        negated = p.op("neg", twiddled[lane], description=f"negated twiddled odd input ({lane} part)")
        difference = p.op("add", loads[f"even_{lane}"], negated,
                          description=f"difference even - twiddled odd ({lane} part)")
        p.store(difference, f"store of the difference ({lane} part)", role=f"difference_{lane}")
    return p


class FFT(Signature):
    def __init__(self):
        super().__init__(
            name="fft", description="radix-2 FFT (complex: split real/imaginary buffers, or one "
                                     "interleaved buffer)",
            pattern_sets=[("decimation in frequency", [decimation_in_frequency()]),
                          ("decimation in time", [decimation_in_time()])])

    chains = True

    def bind(self, pdg: ProgramDependenceGraph, occurrences, types) -> Binding:
        (roles,) = occurrences
        reads = {lane: array_of(pdg, roles[f"even_{lane}"]) for lane in ("re", "im")}
        for lane in ("re", "im"):
            if array_of(pdg, roles[f"odd_{lane}"]) != reads[lane]:
                raise Refusal(f"the butterfly's {lane} inputs come from two buffers "
                              f"('{reads[lane]}', '{array_of(pdg, roles[f'odd_{lane}'])}')")
        writes = {}
        for lane in ("re", "im"):
            written = {array_of(pdg, roles[f"sum_{lane}"]), array_of(pdg, roles[f"difference_{lane}"])}
            if len(written) != 1:
                raise Refusal(f"the butterfly writes its {lane} outputs to two buffers {sorted(written)}")
            writes[lane] = written.pop()
        if reads["re"] == reads["im"]:
            _require_interleaved(pdg, roles)
            reads, writes = {"data": reads["re"]}, {"data": writes["re"]}
        readable = {p.name for p in pdg.function.params if p.direction in ("in", "inout")}
        reads = {role: name if name in readable else _copied_from(pdg, name, readable)
                 for role, name in reads.items()}
        for lane in ("re", "im"):
            twiddle = roles[f"w_{lane}"]
            if pdg.label(twiddle) == "load":
                reads[f"tw_{lane}"] = array_of(pdg, twiddle)
        require_floats(types, reads)
        require_floats(types, writes)
        order = _index_table(pdg, types)
        if order is not None:
            reads["order"] = order
        return Binding(reads, writes)

    def conventions(self, binding, types) -> list[dict]:
        layout = {"layout": "interleaved"} if "data" in binding.reads else {}
        return [{"order_in": order_in, "order_out": order_out, "sign": sign, **layout}
                for order_in in ORDERS for order_out in ORDERS for sign in (-1, 1)]

    def probe_inputs(self, binding, types, rng, scale, limits):
        lanes = ("data",) if "data" in binding.reads else ("re", "im")
        data = types[binding.reads[lanes[0]]]
        width = len(lanes) % 2 + 1  # values per point: 2 interleaved
        fixed = data.shape[-1] // width if data.shape and isinstance(data.shape[-1], int) else None
        points = fixed or min((16, 64)[scale], limits.get("max_points", 64))
        wanted = {lane: (3, width * points)[-(data.rank or 1):] for lane in lanes}
        shape_types = {lane: types[binding.reads[lane]] for lane in lanes}
        if "order" in binding.reads:
            wanted["order"] = (points,)
            shape_types["order"] = types[binding.reads["order"]]
        for lane in ("re", "im"):
            if f"tw_{lane}" in binding.reads:
                table = types[binding.reads[f"tw_{lane}"]]
                same = table.shape is not None and table.shape[-1:] == data.shape[-1:]
                wanted[f"tw_{lane}"] = (points if same else points // 2,)
                shape_types[f"tw_{lane}"] = table
        shapes = symbol_sizes(shape_types, wanted)
        inputs = {lane: rng.uniform(-1, 1, shapes[lane]) for lane in lanes}
        if "order" in binding.reads:
            inputs["order"] = bit_reversal(points)
        for lane, part in (("re", np.cos), ("im", lambda a: -np.sin(a))):
            if f"tw_{lane}" in shapes:
                inputs[f"tw_{lane}"] = part(2 * np.pi * np.arange(shapes[f"tw_{lane}"][0]) / points)
        return inputs

    def chain_limits(self, stages: int) -> dict:
        """A chain of ``stages`` stage nodes transforms at most 2^stages points."""
        return {"max_points": 2 ** stages} if stages > 1 else {}

    def prepare(self, convention, inputs) -> dict:
        points = _points(inputs)
        if points & (points - 1) or points < 2:
            raise Refusal(f"the signal has {points} points; the FFT accelerator takes powers of two")
        limit = convention.get("max_points")
        if limit and points > limit:
            raise Refusal(f"the signal has {points} points; the program's stage nodes transform at "
                          f"most {limit}")
        if "order" in inputs and not np.array_equal(np.asarray(inputs["order"]),
                                                    bit_reversal(points)):
            raise Refusal("the index table is not the bit-reversal permutation of the signal's "
                          "points; the FFT accelerator orders its output itself")
        table_sign = twiddle_sign(inputs, points)
        if table_sign is None:
            raise Refusal("the twiddle tables are not exp(-2 pi i k / N) nor its conjugate; the FFT "
                          "accelerator computes its own twiddles")
        # the probe fed forward tables; conjugated ones turn the transform round
        return {**convention, "sign": convention["sign"] * -table_sign}

    def run(self, convention, inputs, backend):
        points = _points(inputs)
        if "data" in inputs:
            signal = backend.complex(inputs["data"][..., 0::2], inputs["data"][..., 1::2])
        else:
            signal = backend.complex(inputs["re"], inputs["im"])
        order = bit_reversal(points)
        spectrum = backend.fft(signal, inverse=convention["sign"] > 0,
                               reorder_in=order if convention["order_in"] == "bit-reversed" else None,
                               reorder_out=order if convention["order_out"] == "bit-reversed" else None)
        if "data" in inputs:
            return {"data": backend.interleaved(spectrum)}
        return {"re": spectrum.real, "im": spectrum.imag}


def _points(inputs: dict) -> int:
    """The points of the signal in ``inputs`` (split or interleaved)."""
    if "data" in inputs:
        return inputs["data"].shape[-1] // 2
    return inputs["re"].shape[-1]


def _require_interleaved(pdg: ProgramDependenceGraph, roles: dict) -> None:
    """The real and imaginary parts in one buffer must be interleaved: each
    imaginary part right after its real part (Refusal otherwise)."""
    for part in ("even", "odd"):
        re, im = (pdg.facts(roles[f"{part}_{lane}"])["indices"] for lane in ("re", "im"))
        step = difference(pdg.affine(im[-1]), pdg.affine(re[-1]))
        if re[:-1] != im[:-1] or step != {UNIT: 1}:
            raise Refusal("the real and imaginary parts share one buffer, but the imaginary part "
                          "is not the value after the real one (interleaved); the accelerator "
                          "takes two buffers, or one interleaved")


def _copied_from(pdg: ProgramDependenceGraph, array: str, readable: set[str]) -> str:
    """The input the kernel copies into ``array`` before transforming it
    there (out of place: the signal's buffer is an output the kernel fills
    from an input, in some order); Refusal when there is not one."""
    sources = {pdg.facts(value)["array"] for node, facts in pdg.graph.nodes(data=True)
               if facts["label"] == "store" and facts.get("array") == array
               for value, _, data in pdg.graph.in_edges(node, data=True)
               if data["pos"] == "value" and pdg.label(value) == "load"
               and pdg.facts(value)["array"] in readable}
    if len(sources) != 1:
        raise Refusal(f"the butterfly transforms '{array}', which the kernel does not read, and "
                      f"fills it from {len(sources)} inputs ({', '.join(sorted(sources))}), not one")
    return sources.pop()


def _index_table(pdg: ProgramDependenceGraph, types: dict) -> str | None:
    """The integer table the kernel reads (a bit-reversal permutation is the
    only one an FFT has: the probe gives it that, and a run is refused
    with another), or None; Refusal for several."""
    tables = sorted({facts["array"] for _, facts in pdg.graph.nodes(data=True)
                     if facts["label"] == "load" and facts["type"] == "i"
                     and facts["array"] in types})
    if len(tables) > 1:
        raise Refusal(f"the kernel reads {len(tables)} index tables ({', '.join(tables)}); an FFT "
                      "has at most one, its bit-reversal permutation")
    if tables and types[tables[0]].rank != 1:
        raise Refusal(f"the index table '{tables[0]}' has rank {types[tables[0]].rank}, not 1")
    return tables[0] if tables else None


def twiddle_sign(inputs: dict, points: int) -> int | None:
    """-1 when the twiddle tables (if any) are the forward ones, +1 when
    they are conjugated, None when neither."""
    if "tw_re" not in inputs and "tw_im" not in inputs:
        return -1
    angle = 2 * np.pi * np.arange(points) / points
    for sign in (-1, 1):
        ok = True
        for lane, part in (("re", np.cos(angle)), ("im", sign * np.sin(angle))):
            table = inputs.get(f"tw_{lane}")
            if table is not None and not np.allclose(np.asarray(table), part[:len(table)],
                                                     rtol=1e-6, atol=1e-6):
                ok = False
        if ok:
            return sign
    return None


def bit_reversal(points: int) -> np.ndarray:
    """Indices 0 .. points-1 with their log2(points) bits reversed."""
    bits = points.bit_length() - 1
    index = np.arange(points)
    return sum(((index >> bit) & 1) << (bits - 1 - bit) for bit in range(bits))
