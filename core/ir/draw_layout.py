"""Layout of a hierarchical DFG for drawing: graphs are laid out in rows by
topological depth (inputs on top, outputs at the bottom); an internal node
is a box holding its child graph's layout."""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import ConstantBody, GraphBody, KernelBody, Module, Node, TensorBody
from .text import print_expr

CHAR_W, LINE_H, PAD = 7.4, 16, 10
ROW_GAP, COL_GAP, LANE_GAP = 56, 24, 14


@dataclass
class Box:
    """A drawn item: a node, a cluster or a graph parameter, positioned
    relative to its parent cluster."""

    key: str                       # "node:<name>" or "param:<name>"
    kind: str                      # leaf, tensor, constant, cluster, param
    lines: list[str]
    w: float
    h: float
    x: float = 0.0
    y: float = 0.0
    child: "GraphLayout | None" = None
    row: int = 0


@dataclass
class Link:
    """An edge or binding; ``lane`` is the x of the vertical detour taken
    by links that skip rows (None: a direct curve)."""

    src: str
    dst: str
    label: str
    streaming: bool = False
    kind: str = ""
    lane: float | None = None
    lane_index: int = 0


@dataclass
class GraphLayout:
    graph: str
    boxes: dict[str, Box] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    w: float = 0.0
    h: float = 0.0


def node_lines(module: Module, node: Node, placement: dict) -> list[str]:
    """The text shown in a node's box."""
    body = node.body
    lines = [node.name]
    if isinstance(body, KernelBody):
        lines.append(f"@{body.function}")
    elif isinstance(body, TensorBody):
        lines.append(f"op {body.op}")
    elif isinstance(body, ConstantBody):
        lines.append(f"constant {body.type}")
    elif isinstance(body, GraphBody):
        lines[0] = f"{node.name}  (@{body.graph})"
    if node.replication:
        lines.append("[" + ", ".join(print_expr(e) for e in node.replication) + "]")
    if node.hint:
        lines.append(f"hint {node.hint}")
    where = placement.get(node.name) or node.attributes.get("placement")
    if where:
        lines.append(f"on {where}")
    return lines


def text_box(key: str, kind: str, lines: list[str]) -> Box:
    width = max(len(line) for line in lines) * CHAR_W + 2 * PAD
    return Box(key, kind, lines, max(width, 60), len(lines) * LINE_H + PAD)


def layout_graph(module: Module, name: str, placement: dict) -> GraphLayout:
    """Sizes and positions of everything in graph ``name`` (recursively)."""
    graph = module.graph(name)
    result = GraphLayout(name)
    rows: dict[int, list[Box]] = {}
    depth = _depths(graph)
    last = max(depth.values(), default=0) + 2
    inputs = [p for p in graph.params if any(b.param == p.name for b in graph.bind_ins)]
    outputs = [p for p in graph.params if any(b.param == p.name for b in graph.bind_outs)]
    for param in inputs:
        box = text_box(f"in:{param.name}", "param", [f"{param.name}: {param.type}"])
        rows.setdefault(0, []).append(box)
    for node in graph.nodes:
        rows.setdefault(depth[node.name] + 1, []).append(_node_box(module, node, placement))
    for param in outputs:
        box = text_box(f"out:{param.name}", "param", [f"{param.name}: {param.type}"])
        rows.setdefault(last, []).append(box)
    for b in graph.bind_ins:
        result.links.append(Link(f"in:{b.param}", f"node:{b.dst_node}", _label(b.param, b.dst_port), b.streaming))
    for e in graph.edges:
        label = _label(e.src_port, e.dst_port) + ("  1:1" if e.kind == "one-to-one" else "")
        result.links.append(Link(f"node:{e.src_node}", f"node:{e.dst_node}", label, e.streaming, e.kind))
    for b in graph.bind_outs:
        result.links.append(Link(f"node:{b.src_node}", f"out:{b.param}", _label(b.src_port, b.param), b.streaming))
    _place_rows(result, rows)
    _route_lanes(result)
    return result


def _label(src: str, dst: str) -> str:
    return src if src == dst else f"{src}→{dst}"


def _node_box(module: Module, node: Node, placement: dict) -> Box:
    lines = node_lines(module, node, placement)
    if not isinstance(node.body, GraphBody):
        kind = {TensorBody: "tensor", ConstantBody: "constant"}.get(type(node.body), "leaf")
        return text_box(f"node:{node.name}", kind, lines)
    child = layout_graph(module, node.body.graph, placement)
    title_w = max(len(line) for line in lines) * CHAR_W + 2 * PAD
    w = max(child.w + 2 * PAD, title_w)
    h = child.h + 2 * PAD + len(lines) * LINE_H
    return Box(f"node:{node.name}", "cluster", lines, w, h, child=child)


def _depths(graph) -> dict[str, int]:
    """Longest-path depth of each node over the graph's edges."""
    depth = {n.name: 0 for n in graph.nodes}
    for _ in range(len(graph.nodes)):
        changed = False
        for e in graph.edges:
            if e.src_node in depth and e.dst_node in depth and depth[e.dst_node] <= depth[e.src_node]:
                depth[e.dst_node] = depth[e.src_node] + 1
                changed = True
        if not changed:
            break
    return depth


def _place_rows(result: GraphLayout, rows: dict[int, list[Box]]) -> None:
    """Rows top-down, each centred; boxes ordered by the mean position of
    their sources (fewer crossings)."""
    sources: dict[str, list[str]] = {}
    for link in result.links:
        sources.setdefault(link.dst, []).append(link.src)
    widths = {r: sum(b.w for b in boxes) + COL_GAP * (len(boxes) - 1) for r, boxes in rows.items()}
    total_w = max(widths.values(), default=60)
    y = 0.0
    for r in sorted(rows):
        order = {b.key: i for i, b in enumerate(rows[r])}
        boxes = sorted(rows[r], key=lambda b: _mean_x(result, sources.get(b.key, ()), order[b.key]))
        x = (total_w - widths[r]) / 2
        row_h = max(b.h for b in boxes)
        for box in boxes:
            box.x, box.y, box.row = x, y + (row_h - box.h) / 2, r
            x += box.w + COL_GAP
            result.boxes[box.key] = box
        y += row_h + ROW_GAP
    result.w, result.h = total_w, max(y - ROW_GAP, 0)


def _mean_x(result: GraphLayout, keys, fallback: int) -> float:
    placed = [result.boxes[k] for k in keys if k in result.boxes]
    if not placed:
        return -1e6 + fallback
    return sum(b.x + b.w / 2 for b in placed) / len(placed)


def _route_lanes(result: GraphLayout) -> None:
    """Links skipping rows detour through a lane right of the rows they
    skip, so they never cross a box."""
    lanes = 0
    for link in result.links:
        a, b = result.boxes.get(link.src), result.boxes.get(link.dst)
        if a is None or b is None or b.row - a.row <= 1:
            continue
        between = [box for box in result.boxes.values() if a.row < box.row < b.row]
        right = max((box.x + box.w for box in between), default=a.x + a.w)
        link.lane, link.lane_index = right + LANE_GAP * (lanes + 1), lanes
        lanes += 1
        result.w = max(result.w, link.lane + len(link.label) * CHAR_W * 0.8 + PAD)
