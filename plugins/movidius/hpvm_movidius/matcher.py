"""The matcher: OpenVINO itself says which nodes the device runs.

For each graph, the nodes with an OpenVINO form (tensor ops, and the
constants only they read) are built into one ``ov.Model`` and
``Core.query_model`` is asked which of its operations the device supports;
a node is claimed when all of its operations are.  The claimed nodes are
then compiled as one model; when OpenVINO rejects it, each node is tried
alone and those it rejects are refused with OpenVINO's message.  So the
answer follows the device and the OpenVINO version, not a hand-written
list.  One decision per graph, reused for each of its nodes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hpvm.interp.graph_exec import topological_order
from hpvm.ir.graph import ConstantBody, Graph, Module, TensorBody

from .ov_errors import message
from .translate import TRANSLATED_OPS, Untranslatable, node_of, ov_parameter, translate_node


@dataclass
class GraphDecision:
    """Per node of one graph: claimed, or the reason it is not."""

    claimed: set[str] = field(default_factory=set)
    reasons: dict[str, str] = field(default_factory=dict)


def candidates(module: Module, graph: Graph) -> tuple[list[str], dict[str, str]]:
    """Nodes with an OpenVINO form, producers first, and why the others
    have none."""
    reasons: dict[str, str] = {}
    readers: dict[str, set[str]] = {}
    for e in graph.edges:
        readers.setdefault(e.src_node, set()).add(e.dst_node)
    tensor = set()
    for node in graph.nodes:
        body = node.body
        if isinstance(body, TensorBody) and _has_scalar_result(body):
            # OpenVINO 2026.4's CPU plugin crashed the process compiling a
            # MatMul reshaped to a scalar; a crash cannot be caught and told
            reasons[node.name] = "a rank-0 (scalar) result: left to a target beside OpenVINO"
        elif isinstance(body, TensorBody) and any(p.is_buffer and p.type.element.name == "f64"
                                                  for p in body.params):
            reasons[node.name] = "f64 values: OpenVINO's devices compute them in f32"
        elif isinstance(body, TensorBody) and any(p.is_buffer and p.type.element.is_narrow
                                                  for p in body.params):
            reasons[node.name] = ("narrow storage types (bf16, float8 ...): left to a target "
                                  "with hpvm's conversions")
        elif isinstance(body, TensorBody) and body.op in TRANSLATED_OPS:
            tensor.add(node.name)
        elif isinstance(body, TensorBody):
            reasons[node.name] = f"tensor op '{body.op}' has no OpenVINO form here"
        elif not isinstance(body, ConstantBody):
            reasons[node.name] = ("a kernel node: OpenVINO runs tensor ops" if node.is_leaf
                                  else "an internal node")
    chosen = []
    for node in topological_order(graph):
        if node.name in tensor:
            chosen.append(node.name)
        elif isinstance(node.body, ConstantBody):
            if readers.get(node.name) and readers[node.name] <= tensor:
                chosen.append(node.name)
            else:
                reasons[node.name] = "a constant read by nodes OpenVINO does not run"
    return chosen, reasons


def _has_scalar_result(body: TensorBody) -> bool:
    return any(p.direction == "out" and p.type.shape == () for p in body.params)


def decide(core, device: str, module: Module, graph: Graph) -> GraphDecision:
    """Which nodes of ``graph`` OpenVINO's ``device`` runs (module docstring)."""
    import openvino as ov
    names, reasons = candidates(module, graph)
    decision = GraphDecision(reasons=dict(reasons))
    model, built = _candidate_model(module, graph, names, decision)
    if not built:
        return decision
    try:
        supported = set(core.query_model(model, device))
    except Exception as error:  # OpenVINO raises RuntimeError subclasses of its own
        for name in built:
            decision.reasons[name] = f"OpenVINO cannot query device {device}: {message(error)}"
        return decision
    ops_of: dict[str, list] = {}
    for op in model.get_ordered_ops():
        ops_of.setdefault(node_of(op.get_friendly_name()), []).append(op)
    for name in built:
        missing = sorted({op.get_type_name() for op in ops_of.get(name, ())
                          if op.get_friendly_name() not in supported})
        if missing:
            decision.reasons[name] = (f"OpenVINO {ov.get_version().split('-')[0]} on {device} "
                                      f"does not support {', '.join(missing)}")
        else:
            decision.claimed.add(name)
    _refuse_rejected(core, device, module, graph, names, decision)
    return decision


def _candidate_model(module: Module, graph: Graph, names: list[str], decision: GraphDecision):
    """One model of every node in ``names`` that translates (a Result per
    output so nothing is pruned); the nodes built."""
    import openvino as ov
    parameters, produced, built, results = [], {}, [], []
    feeds = {(e.dst_node, e.dst_port): (e.src_node, e.src_port) for e in graph.edges}

    def source(node: str, port: str):
        src = feeds.get((node, port))
        if src in produced:
            return produced[src]
        parameter = ov_parameter(f"{node}/in/{port}", module.node_param(graph.node(node), port).type)
        parameters.append(parameter)
        return parameter.output(0)

    for name in names:
        try:
            outputs = translate_node(module, graph, name, source)
        except Untranslatable as error:
            decision.reasons[name] = str(error)
            continue
        except Exception as error:  # OpenVINO's shape inference refusing the op
            decision.reasons[name] = f"OpenVINO refuses it: {message(error)}"
            continue
        built.append(name)
        for port, output in outputs.items():
            produced[(name, port)] = output
            results.append(_result(output, f"{name}/result/{port}"))
    return (ov.Model(results, parameters, graph.name) if built else None), built


def _result(output, name: str):
    from openvino import opset13 as ops
    return ops.result(output, name=name)


def _refuse_rejected(core, device: str, module: Module, graph: Graph, names: list[str],
                     decision: GraphDecision) -> None:
    """Compile the claimed nodes of ``names`` (the candidates, producers
    first) as one model; if OpenVINO rejects it, refuse each node it
    rejects alone."""
    claimed = [n for n in names if n in decision.claimed]
    if not claimed or _compiles(core, device, module, graph, claimed) is None:
        return
    for name in claimed:
        if isinstance(graph.node(name).body, ConstantBody):
            continue
        problem = _compiles(core, device, module, graph, [name])
        if problem:
            decision.claimed.discard(name)
            decision.reasons[name] = f"OpenVINO rejects it on {device}: {problem}"
    for name in claimed:  # a constant whose readers were all refused
        if isinstance(graph.node(name).body, ConstantBody) and not any(
                e.dst_node in decision.claimed for e in graph.edges if e.src_node == name):
            decision.claimed.discard(name)
            decision.reasons[name] = "a constant read by nodes OpenVINO does not run"


def _compiles(core, device: str, module: Module, graph: Graph, names: list[str]) -> str | None:
    """None when OpenVINO compiles ``names`` as one model, else its message."""
    scratch = GraphDecision()
    model, _ = _candidate_model(module, graph, names, scratch)
    try:
        core.compile_model(model, device)
    except Exception as error:
        return message(error)
    return None
