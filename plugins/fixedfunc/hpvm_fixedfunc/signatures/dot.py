"""Accelerators whose kernels are dot products: GEMM and 1-D FIR filters.

Structure (one pattern for both): in a loop, ``acc + a * b`` carried round
the loop from zero, the sum stored after it.  The binding and the probe
tell the two apart:

- **gemm**: ``a``, ``b`` and the result are matrices (rank 2, floats);
  conventions: either load as the left operand, each transposed or not.
- **fir**: a signal ``x`` (rank 1, or rank 2 for a batch along the last
  axis) and taps ``h`` (rank 1); ``y[n] = sum_k h[k] * x[n + k]``
  (correlation) or ``h[k] * x[n + K - 1 - k]`` (convolution), both over
  the valid range (``len(y) = len(x) - K + 1``).
"""
from __future__ import annotations

from hpvm.passes.pdg import ProgramDependenceGraph
from hpvm.passes.pdg_match import Pattern
from hpvm.passes.value_ranges import UNIT

from .base import Binding, Refusal, Signature, array_of, require_floats, symbol_sizes


def dot_product() -> Pattern:
    p = Pattern("dot product")
    loop = p.loop("loop over the summed index")
    total = p.phi(loop, "sum carried round the loop")
    left = p.load("load of the first factor", role="left")
    right = p.load("load of the second factor", role="right")
    product = p.op("mul", left, right, description="product of two loaded values")
    p.feed(p.op("add", total, product, description="sum + product"), total, "next")
    p.store(total, "store of the sum after the loop", role="store")
    p.roles["total"] = total
    return p


class _DotProduct(Signature):
    def _operands(self, pdg: ProgramDependenceGraph, occurrences, types) -> tuple[str, str, str]:
        (roles,) = occurrences
        start = [s for s, _, d in pdg.graph.in_edges(roles["total"], data=True) if d["pos"] == "init"]
        if not start or pdg.label(start[0]) != "const" or pdg.facts(start[0])["value"] != 0:
            raise Refusal("the sum does not start from zero")
        names = (array_of(pdg, roles["left"]), array_of(pdg, roles["right"]), array_of(pdg, roles["store"]))
        if len(set(names)) != 3:
            raise Refusal(f"the factors and the result are not three buffers ({', '.join(names)})")
        for name in names:
            if name not in types:
                raise Refusal(f"'{name}' is not a parameter of the kernel")
        require_floats(types, dict(zip(("first factor", "second factor", "result"), names)))
        return names


class GEMM(_DotProduct):
    def __init__(self):
        super().__init__(name="gemm", description="dense matrix multiply C = op(A) @ op(B)",
                         pattern_sets=[("dot product per element", [dot_product()])])

    def bind(self, pdg, occurrences, types) -> Binding:
        left, right, result = self._operands(pdg, occurrences, types)
        for name in (left, right, result):
            if types[name].rank != 2:
                raise Refusal(f"'{name}' is not a matrix (rank {types[name].rank})")
        return Binding({"a": left, "b": right}, {"c": result})

    def conventions(self, binding, types):
        return [{"first": first, "transpose_first": t1, "transpose_second": t2}
                for first in ("a", "b") for t1 in (False, True) for t2 in (False, True)]

    def probe_inputs(self, binding, types, rng, scale, limits):
        shapes = _distinct_sizes({"a": types[binding.reads["a"]], "b": types[binding.reads["b"]],
                                  "c": types[binding.writes["c"]]}, first=5 + 4 * scale)
        return {role: rng.uniform(-1, 1, shapes[role]) for role in ("a", "b")}

    def run(self, convention, inputs, backend):
        first, second = (inputs["a"], inputs["b"]) if convention["first"] == "a" else (inputs["b"], inputs["a"])
        if convention["transpose_first"]:
            first = first.T
        if convention["transpose_second"]:
            second = second.T
        if first.shape[1] != second.shape[0]:
            return {}
        return {"c": backend.matmul(first, second)}


class FIR(_DotProduct):
    def __init__(self):
        super().__init__(name="fir", description="1-D FIR filter (valid correlation or convolution)",
                         pattern_sets=[("dot product per output sample", [dot_product()])])

    def bind(self, pdg, occurrences, types) -> Binding:
        left, right, result = self._operands(pdg, occurrences, types)
        rank = types[result].rank
        if rank not in (1, 2):
            raise Refusal(f"the output '{result}' has rank {rank}; a FIR filter writes a signal (rank 1, or "
                          "2 for a batch)")
        signals = [n for n in (left, right) if types[n].rank == rank]
        taps = [n for n in (left, right) if types[n].rank == 1]
        if not signals or not taps or (rank == 2 and len(signals) != 1):
            raise Refusal(f"'{left}' and '{right}' are not a signal of rank {rank} and rank-1 taps")
        if rank == 2:
            signal = signals[0]
        else:  # the signal is read where the output sample is: at an index with an instance id
            (roles,) = occurrences
            per_sample = [name for role, name in (("left", left), ("right", right))
                          if _follows_the_instance(pdg, roles[role])]
            signal = per_sample[0] if len(per_sample) == 1 else left
        tap = right if signal == left else left
        return Binding({"x": signal, "h": tap}, {"y": result})

    def conventions(self, binding, types):
        return [{"swap": swap, "mode": mode} for swap in (False, True) for mode in ("correlate", "convolve")]

    def probe_inputs(self, binding, types, rng, scale, limits):
        x_type, h_type, y_type = (types[binding.reads["x"]], types[binding.reads["h"]],
                                  types[binding.writes["y"]])
        taps = (3, 5)[scale]
        length = (12, 20)[scale]
        batch = (2,) if x_type.rank == 2 else ()
        wanted = {"h": (taps,), "x": (*batch, length), "y": (*batch, length - taps + 1)}
        shapes = symbol_sizes({"h": h_type, "x": x_type, "y": y_type}, wanted)
        if shapes["y"][-1] != shapes["x"][-1] - shapes["h"][0] + 1:
            raise Refusal("the output's declared length is not that of a valid-mode filter "
                          "(len(x) - len(h) + 1)")
        return {role: rng.uniform(-1, 1, shapes[role]) for role in ("x", "h")}

    def probe_symbols(self, binding, types, inputs):
        values = super().probe_symbols(binding, types, inputs)
        length = inputs["x"].shape[-1] - inputs["h"].shape[0] + 1
        output = types[binding.writes["y"]].shape
        if output and isinstance(output[-1], str):
            values.setdefault(output[-1], length)
        return values

    def run(self, convention, inputs, backend):
        signal, taps = inputs["x"], inputs["h"]
        if convention["swap"]:
            if signal.ndim != 1:
                return {}
            signal, taps = taps, signal
        if taps.shape[0] > signal.shape[-1]:
            return {}
        if convention["mode"] == "convolve":
            taps = backend.flip(taps)
        return {"y": backend.correlate_valid(signal, taps)}


def _follows_the_instance(pdg: ProgramDependenceGraph, load: int) -> bool:
    """Whether the index of ``load`` moves with an instance id (the output
    sample a FIR instance computes)."""
    return any(atom != UNIT and pdg.label(atom) == "instance_id"
               for index in pdg.facts(load)["indices"] for atom in pdg.affine(index))


def _distinct_sizes(types: dict, first: int) -> dict[str, tuple[int, ...]]:
    """Shapes giving each shape symbol its own size (``first``, then one
    more for each new symbol), so a probe tells transposes apart."""
    sizes: dict[str, int] = {}
    for declared in types.values():
        for dim in declared.shape or ():
            if isinstance(dim, str) and dim not in sizes:
                sizes[dim] = first + len(sizes)
    return {role: tuple(sizes[d] if isinstance(d, str) else int(d) for d in t.shape) for role, t in types.items()}

