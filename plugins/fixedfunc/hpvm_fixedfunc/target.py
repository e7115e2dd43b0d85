"""The 'fixedfunc' target: kernels recognised as the work of a
fixed-function accelerator (FFT, Viterbi decoder, GEMM, FIR filter) run on
that accelerator.

Matcher: hpvm_fixedfunc.recognise (program-dependence-graph patterns,
binding rules, a probe against the reference interpreter); a node it
refuses gets, in the placement report, each signature tried and why it
failed.  Partitions: a chain of FFT stage nodes is one launch.  Code
generator: the launch plan of each node (signature, convention, ports)
and the module's text.  Runtime: :class:`FixedFunctionDevice`, running the
accelerators' functions on numpy (pocketfft, BLAS) or, with option
``backend``, on PyTorch (cuFFT and cuBLAS on a CUDA GPU).  No ESP
accelerator driver exists here, so every timing is labelled emulated.
"""
from __future__ import annotations

import json

from hpvm.errors import TargetError
from hpvm.ir.graph import Graph, GraphBody, Module, Node
from hpvm.options import Option
from hpvm.target import Artifact, Availability, Device, NodeRef, Target

PLANS_FILE = "plans.json"
OPTIONS = [Option("backend", str, "auto", "where the accelerators' functions run: numpy, torch "
                  "(CUDA when visible), torch:cpu, torch:cuda; auto: torch on CUDA when a GPU is "
                  "visible, else numpy")]


class FixedFunctionTarget(Target):
    name = "fixedfunc"
    description = ("fixed-function accelerators (FFT, Viterbi, GEMM, FIR) claimed by semantic match "
                   "of kernels' program dependence graphs; emulated")

    def availability(self) -> Availability:
        from .backends import cuda_present
        from .signatures import SIGNATURES
        names = ", ".join(s.name for s in SIGNATURES)
        where = "numpy" + (" and torch on CUDA" if cuda_present() else "")
        return Availability.yes(f"accelerators {names}: emulated on {where} (no ESP accelerator "
                                "driver found)")

    def options(self) -> list[Option]:
        return OPTIONS

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        from .recognise import recognise
        return node.name in recognise(module, graph).claims

    def declines(self, module: Module, graph: Graph, node: Node) -> str:
        from .recognise import nearest_first, recognise
        reasons = nearest_first(recognise(module, graph).misses.get(node.name, []))
        if not reasons:
            return ""
        shown = "; ".join(str(r) for r in reasons[:3])
        more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
        return f"no accelerator signature fits: {shown}{more}"

    def partitions(self, module: Module, nodes: list[NodeRef], options: dict) -> list[list[NodeRef]]:
        from .recognise import recognise
        groups = {}
        for ref in nodes:
            claim = recognise(module, module.graph(ref.graph)).claims[ref.node]
            groups.setdefault((ref.graph, claim.members), []).append(ref)
        return [refs for refs in groups.values() if len(refs) > 1]

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from .backends import make_backend
        make_backend(options.get("backend", "auto"))    # a bad backend fails here, not at load
        plans = {str(ref): self._plan(module, ref).to_json() for ref in nodes}
        notes = [f"{ref}: {plan['signature']} accelerator ({_convention_words(plan['convention'])})"
                 for ref, plan in plans.items()]
        return Artifact(self.name, {PLANS_FILE: json.dumps(plans, indent=1).encode()},
                        {"nodes": list(plans), "notes": notes})

    def _plan(self, module: Module, ref: NodeRef):
        from .device import LaunchPlan
        from .probe import ports_of
        from .recognise import recognise
        graph = module.graph(ref.graph)
        node = graph.node(ref.node)
        if isinstance(node.body, GraphBody):    # an outlined chain
            graph = module.graph(node.body.graph)
            claim = next(iter(recognise(module, graph).claims.values()))
        else:
            claim = recognise(module, graph).claims[ref.node]
        ports = ports_of(graph, list(claim.members), claim.first, claim.last)
        return LaunchPlan(claim.signature, claim.convention, ports.inputs, ports.outputs, claim.members)

    def load(self, artifact: Artifact, options: dict) -> Device:
        from .backends import make_backend
        from .device import FixedFunctionDevice, LaunchPlan
        try:
            plans = json.loads(artifact.files[PLANS_FILE])
        except (KeyError, ValueError) as error:
            raise TargetError(f"fixedfunc: the artifact's {PLANS_FILE} is missing or damaged ({error}); "
                              "compile the program again") from None
        return FixedFunctionDevice({key: LaunchPlan.from_json(p) for key, p in plans.items()},
                                   make_backend(options.get("backend", "auto")))


def _convention_words(convention: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in convention.items())
