"""What NVDLA runs: tensor ops of its engines on FP32 buffers (computed in
FP16 or INT8), with every dimension but the batch known, weights and
per-channel operands constant; constants read only by such nodes.  Each
refusal says why, for the placement report."""
from __future__ import annotations

from hpvm.ir.graph import ConstantBody, Graph, Module, Node, TensorBody

from .layers import ENGINE_OF, FC_OPS, NotForNvdla, build_layers

NO_ENGINE = {
    "softmax": "NVDLA has no softmax engine",
    "reshape": "a reshape moves data in NVDLA's channel-packed layout",
}


def refusal(module: Module, graph: Graph, node: Node) -> str | None:
    """None when NVDLA runs ``node``, else why not."""
    body = node.body
    if isinstance(body, ConstantBody):
        readers = [graph.node(e.dst_node) for e in graph.edges if e.src_node == node.name]
        if readers and all(refusal(module, graph, r) is None for r in readers):
            return None
        return "a constant read by nodes NVDLA does not run"
    if not isinstance(body, TensorBody):
        return "a kernel node: NVDLA runs tensor ops"
    if body.op not in ENGINE_OF:
        return NO_ENGINE.get(body.op, f"tensor op '{body.op}' has no NVDLA engine")
    for p in body.params:
        if p.type.element.name != "f32":
            return f"port '{p.name}' is {p.type.element.name}; NVDLA takes f32 tensors (run in FP16/INT8)"
        if any(not isinstance(d, int) for d in p.type.shape[1:]):
            return f"port '{p.name}' has a symbolic dimension other than the batch"
    ranks = {p.name: len(p.type.shape) for p in body.params}
    out = next(p.name for p in body.params if p.direction == "out")
    if body.op in FC_OPS and ranks.get("a") != 2:
        return "a fully connected layer takes a 2-D input [batch, features]"
    if ENGINE_OF[body.op] == "cdp" and ranks[out] != 4:
        return "CDP normalises [N, C, H, W] feature data"
    if ENGINE_OF[body.op] in ("sdp", "pdp", "concat", "slice") and ranks[out] not in (2, 4):
        return f"NVDLA's feature data is [N, C] or [N, C, H, W], not rank {ranks[out]}"
    if body.op == "concat" and body.attrs.get("axis", 1) % ranks[out] != 1:
        return "concatenation along another axis than channels moves data"
    if body.op == "flatten":
        readers = [graph.node(e.dst_node) for e in graph.edges if e.src_node == node.name]
        if not readers or any(not isinstance(r.body, TensorBody) or r.body.op not in FC_OPS
                              for r in readers):
            return "a flatten not read by a fully connected layer moves data"
        return None
    constant_ports = {e.dst_port for e in graph.edges if e.dst_node == node.name
                      and isinstance(graph.node(e.src_node).body, ConstantBody)}
    inputs = [p.name for p in body.params if p.direction == "in"]
    feature = ({"x", "a", "x0"} & set(inputs)) if body.op not in ("add", "mul") else set(inputs)
    if body.op == "concat" and constant_ports:
        return "concatenates a constant; fold it first (hpvm opt -p fold-tensor-constants)"
    if feature and feature <= constant_ports:
        return ("its feature input is a constant; fold it first (hpvm opt -p "
                "fold-tensor-constants)")
    if body.op in ("add", "mul", "elementwise"):
        tensors = [p for p in body.params if p.direction == "in" and p.name not in constant_ports]
        result = module.node_param(node, out).type.shape
        if any(p.type.shape != result for p in tensors):
            return "element-wise with a tensor operand that broadcasts (SDP reads whole surfaces)"
    return _layer_problem(module, graph, node)


def _layer_problem(module: Module, graph: Graph, node: Node) -> str | None:
    """Build the node's hardware layer alone: what build_layers refuses."""
    from hpvm.passes.outline import Members
    # build_layers follows the graph's edges itself; the graph's inputs it
    # is told.
    feeds = {(b.dst_node, b.dst_port): b.param for b in graph.bind_ins if b.dst_node == node.name}
    shapes = {f"{node.name}.{p.name}": (1,) + tuple(p.type.shape[1:])
              for p in module.node_params(node) if p.writes}
    try:
        build_layers(Members(graph, (node.name,), feeds, (), ()), shapes)
    except NotForNvdla as error:
        return str(error)
    return None
