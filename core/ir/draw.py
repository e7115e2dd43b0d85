"""``hpvm viz``: draw a module's hierarchical DFG as SVG (no dependency).

Leaf nodes are boxes showing their kernel, replication, hint and
placement; internal nodes are rounded clusters holding their child graph;
graph parameters are ovals; edges are labelled with the buffer (port) they
carry, ``1:1`` for one-to-one edges, dashed when streaming."""
from __future__ import annotations

from html import escape
from pathlib import Path

from .draw_layout import CHAR_W, LINE_H, PAD, ROW_GAP, Box, GraphLayout, layout_graph
from .graph import Module

STYLE = {
    "leaf": ("#dbeafe", "#1d4ed8", 4), "tensor": ("#ffedd5", "#c2410c", 4),
    "constant": ("#f3f4f6", "#4b5563", 4), "cluster": ("#fefce8", "#a16207", 14),
    "param": ("#ffffff", "#374151", 16),
}
MARGIN = 20


def draw(module: Module, path: str | Path, placement: dict[str, str] | None = None) -> Path:
    """Write ``module``'s DFG as an SVG file at ``path`` (returned).
    ``placement`` maps node names to the target each runs on, if known."""
    path = Path(path)
    path.write_text(svg(module, placement))
    return path


def svg(module: Module, placement: dict[str, str] | None = None) -> str:
    """The SVG text of ``module``'s DFG."""
    layout = layout_graph(module, module.root, placement or {})
    title = f"module {module.name}  (root @{module.root})"
    title_h = LINE_H + PAD
    width = max(layout.w, len(title) * CHAR_W) + 2 * MARGIN
    height = layout.h + 2 * MARGIN + title_h
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="12">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#374151"/>'
             '</marker></defs>',
             '<rect width="100%" height="100%" fill="white"/>',
             _text(MARGIN, MARGIN + 4, title, bold=True)]
    _render(layout, MARGIN, MARGIN + title_h, parts)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _render(layout: GraphLayout, ox: float, oy: float, parts: list[str]) -> None:
    for box in layout.boxes.values():
        _render_box(box, ox + box.x, oy + box.y, parts)
    for link in layout.links:
        a, b = layout.boxes.get(link.src), layout.boxes.get(link.dst)
        if a is None or b is None:
            continue
        x1 = ox + a.x + a.w / 2 + _spread(layout, link, a, outgoing=True)
        x2 = ox + b.x + b.w / 2 + _spread(layout, link, b, outgoing=False)
        y1, y2 = oy + a.y + a.h, oy + b.y
        if link.lane is None:
            mid = (y1 + y2) / 2
            d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
            rightwards = x2 > x1 + 5
            label_at = ((x1 + x2) / 2 + (-4 if rightwards else 4), mid + 4, "end" if rightwards else "start")
        else:
            lane, top = ox + link.lane, y1 + ROW_GAP / 3
            bottom = y2 - ROW_GAP / 4 - 7 * (link.lane_index % 3)
            d = (f"M{x1:.1f},{y1:.1f} Q{x1:.1f},{top:.1f} {(x1 + lane) / 2:.1f},{top:.1f} "
                 f"L{lane - 6:.1f},{top:.1f} Q{lane:.1f},{top:.1f} {lane:.1f},{top + 6:.1f} "
                 f"L{lane:.1f},{bottom - 6:.1f} Q{lane:.1f},{bottom:.1f} {lane - 6:.1f},{bottom:.1f} "
                 f"L{(x2 + lane) / 2:.1f},{bottom:.1f} Q{x2:.1f},{bottom:.1f} {x2:.1f},{y2:.1f}")
            label_at = (lane + 4, (top + bottom) / 2, "start")
        dash = ' stroke-dasharray="6,4"' if link.streaming else ""
        color = "#2563eb" if link.streaming else "#374151"
        width = 2 if link.kind == "one-to-one" else 1.3
        parts.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}"{dash} '
                     'marker-end="url(#arrow)"/>')
        parts.append(_text(label_at[0], label_at[1], link.label + ("  stream" if link.streaming else ""),
                           size=10, color=color, anchor=label_at[2], halo=True))


def _spread(layout: GraphLayout, link, box, outgoing: bool) -> float:
    """Horizontal offset so several links at one box do not overlap."""
    peers = [other for other in layout.links if (other.src if outgoing else other.dst) == box.key]
    index = peers.index(link)
    step = min(box.w / (len(peers) + 1), 40)
    return (index - (len(peers) - 1) / 2) * step


def _render_box(box: Box, x: float, y: float, parts: list[str]) -> None:
    fill, stroke, radius = STYLE[box.kind]
    dash = ' stroke-dasharray="5,3"' if box.kind == "cluster" else ""
    parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="{radius}" '
                 f'fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dash}/>')
    for i, line in enumerate(box.lines):
        ty = y + PAD / 2 + LINE_H * (i + 1) - 4
        if box.kind == "cluster":
            parts.append(_text(x + PAD, ty, line, bold=i == 0, color=stroke))
        else:
            parts.append(_text(x + box.w / 2, ty, line, bold=i == 0 and box.kind != "param",
                               anchor="middle"))
    if box.child is not None:
        _render(box.child, x + (box.w - box.child.w) / 2, y + PAD / 2 + LINE_H * len(box.lines) + PAD / 2,
                parts)


def _text(x, y, text, bold=False, size=12, color="#111827", anchor="start", halo=False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    stroke = ' stroke="white" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" text-anchor="{anchor}"'
            f'{weight}{stroke}>{escape(text)}</text>')
