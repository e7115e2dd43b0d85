"""Recognition: which nodes of a graph an accelerator can run, and why the
others cannot.

For every kernel node, each signature's pattern sets are looked for in the
kernel's program dependence graph (hpvm.passes.pdg) and the occurrences bound
to the accelerator's roles; nodes that match are grouped (a chain of FFT
stage nodes is one FFT) and each group is probed (hpvm_fixedfunc.probe).
The result of a graph is computed once per module object.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import time
from dataclasses import dataclass, field

from hpvm.errors import HpvmError
from hpvm.interp.graph_exec import topological_order
from hpvm.ir.graph import Graph, KernelBody, Module
from hpvm.ir.kernel import KernelFunction
from hpvm.passes.pdg import build_pdg
from hpvm.passes.pdg_match import SearchTooLong, diagnose, find

from .probe import choose_convention
from .signatures import SIGNATURES, Binding, Refusal, Signature

MAX_BINDINGS = 64
"""Occurrence combinations a binding rule is tried on before giving up."""


@dataclass(frozen=True)
class Candidate:
    """A node whose kernel holds a signature's patterns, bound to roles."""

    node: str
    signature: Signature
    form: str
    binding: Binding


@dataclass(frozen=True)
class Claim:
    """A group of nodes an accelerator runs as one launch."""

    signature: str
    form: str
    members: tuple[str, ...]
    convention: dict
    first: Binding
    last: Binding


class StructuralMiss:
    """A signature's pattern absent from a kernel; the words (which pattern
    operation is missing, hpvm.passes.pdg_match.diagnose) and how much of the
    pattern was found are worked out only when a placement report asks."""

    def __init__(self, signature: str, form: str, pdg, pattern):
        self.heading = f"{signature} ({form})"
        self._pdg, self._pattern, self._diagnosis = pdg, pattern, None

    @property
    def found(self) -> float:
        """The share of the pattern the kernel holds."""
        return self._diagnose()[0]

    def _diagnose(self) -> tuple[float, str]:
        if self._diagnosis is None:
            self._diagnosis = diagnose(self._pdg, self._pattern)
        return self._diagnosis

    def __str__(self) -> str:
        return f"{self.heading}: {self._diagnose()[1]}"


def nearest_first(reasons: list) -> list:
    """Refusals after the structure matched first, then structural misses,
    most of their pattern found first."""
    return sorted(reasons, key=lambda r: -r.found if isinstance(r, StructuralMiss) else -2.0)


@dataclass
class Recognition:
    claims: dict[str, Claim] = field(default_factory=dict)
    """Node name -> the claim it belongs to."""
    misses: dict[str, list] = field(default_factory=dict)
    """Node name -> why each signature tried refused it (str() of each)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Node name -> time spent matching its kernel."""


_CACHE: dict[tuple[int, str], tuple[Module, Recognition]] = {}


def clear_caches() -> None:
    """Forget every kernel's PDG and every graph's recognition (to time
    recognition cold)."""
    kernel_pdg.cache_clear()
    _CACHE.clear()


def recognise(module: Module, graph: Graph) -> Recognition:
    """What fixedfunc claims in ``graph`` of ``module`` (computed once per
    module object)."""
    key = (id(module), graph.name)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is module:
        return cached[1]
    result = _recognise(module, graph)
    if len(_CACHE) > 32:
        _CACHE.clear()
    _CACHE[key] = (module, result)
    return result


@functools.lru_cache(maxsize=256)
def kernel_pdg(function: KernelFunction):
    return build_pdg(function)


def buffer_types(function: KernelFunction) -> dict:
    """The declared type of each buffer parameter, by name."""
    return {p.name: p.type for p in function.params if p.is_buffer}


def _recognise(module: Module, graph: Graph) -> Recognition:
    result = Recognition()
    candidates: dict[str, list[Candidate]] = {}
    for node in graph.nodes:
        if isinstance(node.body, KernelBody):
            started = time.perf_counter()
            found, reasons = match_kernel(node.name, module.function(node.body.function))
            result.seconds[node.name] = time.perf_counter() - started
            candidates[node.name] = found
            result.misses[node.name] = reasons
    order = [node.name for node in topological_order(graph)]
    for signature in SIGNATURES:
        matched = {name: c for name in order for c in candidates.get(name, ())
                   if c.signature is signature and name not in result.claims}
        groups = _chains(graph, order, matched) if signature.chains else [[n] for n in matched]
        for group in groups:
            _probe(module, graph, [matched[n] for n in group], result)
    for name in result.claims:
        result.misses.pop(name, None)
    return result


def match_kernel(node: str, function: KernelFunction) -> tuple[list[Candidate], list]:
    """Every signature the kernel's structure and binding fit, and, for the
    others, why not."""
    pdg = kernel_pdg(function)
    types = buffer_types(function)
    found, bound_refusals, structural = [], [], []
    for signature in SIGNATURES:
        for form, patterns in signature.pattern_sets:
            try:
                occurrences = [find(pdg, pattern, limit=16) for pattern in patterns]
            except SearchTooLong as error:
                bound_refusals.append(f"{signature.name} ({form}): {error} (the kernel is large); not claimed")
                continue
            missing = [pattern for pattern, places in zip(patterns, occurrences) if not places]
            if missing:
                structural.append(StructuralMiss(signature.name, form, pdg, missing[0]))
                continue
            try:
                binding = _bind(signature, pdg, occurrences, types)
            except Refusal as refusal:
                bound_refusals.append(f"{signature.name} ({form}): {refusal}")
                continue
            found.append(Candidate(node, signature, form, binding))
    return found, bound_refusals + structural


def _bind(signature: Signature, pdg, occurrences, types) -> Binding:
    first_refusal = None
    for combination in itertools.islice(itertools.product(*occurrences), MAX_BINDINGS):
        try:
            with refusing_failures(signature):
                return signature.bind(pdg, list(combination), types)
        except Refusal as refusal:
            first_refusal = first_refusal or refusal
    raise first_refusal


@contextlib.contextmanager
def refusing_failures(signature: Signature):
    """Any failure of a signature's step refuses the kernel (with the
    reason) instead of failing the user's compile."""
    try:
        yield
    except Refusal:
        raise
    except HpvmError as error:
        raise Refusal(str(error).splitlines()[0]) from None
    except Exception as error:  # a bug of a signature: refuse, and say so
        raise Refusal(f"the {signature.name} signature failed on this kernel ({type(error).__name__}: "
                      f"{error}); this is a bug of hpvm-fixedfunc, please report it") from None


def _probe(module: Module, graph: Graph, group: list[Candidate], result: Recognition) -> None:
    first, last = group[0], group[-1]
    members = [c.node for c in group]
    signature = first.signature
    types = buffer_types(module.function(graph.node(first.node).body.function))
    limits = signature.chain_limits(len(group))
    try:
        with refusing_failures(signature):
            convention = choose_convention(signature, module, graph, members, first.binding, last.binding,
                                           types, limits)
    except Refusal as refusal:
        what = f"{signature.name} ({first.form})" + (f" over {len(members)} chained nodes"
                                                     if len(members) > 1 else "")
        for name in members:
            result.misses[name] = [f"{what}: structure matched, but {refusal}"] + result.misses[name]
        return
    claim = Claim(signature.name, first.form, tuple(members), convention, first.binding, last.binding)
    for name in members:
        result.claims[name] = claim


def _chains(graph: Graph, order: list[str], matched: dict[str, Candidate]) -> list[list[str]]:
    """Maximal runs of matched nodes where each feeds every buffer it
    writes to the next one's matching reads."""
    def feeds(before: Candidate, after: Candidate) -> bool:
        return all(any(e.src_node == before.node and e.src_port == before.binding.writes[role]
                       and e.dst_node == after.node and e.dst_port == after.binding.reads[role]
                       for e in graph.edges) for role in before.binding.writes)

    successor = {}
    for name in matched:
        following = [other for other in matched if other != name and feeds(matched[name], matched[other])]
        if len(following) == 1:
            successor[name] = following[0]
    has_predecessor = set(successor.values())
    chains = []
    for name in order:
        if name in matched and name not in has_predecessor:
            chain = [name]
            while chain[-1] in successor and successor[chain[-1]] not in chain:
                chain.append(successor[chain[-1]])
            chains.append(chain)
    return chains
