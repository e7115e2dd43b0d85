"""The ratios of a suite run as an SVG bar chart (hand-written SVG, no
plotting library): one horizontal bar per (program, target, peer) row,
on a log scale centred on 1.  A bar to the right (red) means hpvm is slower
than the peer by that factor; to the left (green), faster.

    from benchmarks.plot import ratio_svg
    Path("ratios.svg").write_text(ratio_svg(rows, title="cpu, large"))
"""
from __future__ import annotations

import math
from html import escape

ROW_HEIGHT = 18
LABEL_WIDTH = 300
PLOT_WIDTH = 480
MARGIN = 20


def _decades(ratios: list[float]) -> tuple[int, int]:
    """The powers of ten the axis spans: at least 0.1 .. 10."""
    low = min([0.1] + ratios)
    high = max([10.0] + ratios)
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


def ratio_svg(rows, title: str = "hpvm time / peer time") -> str:
    """SVG text for the rows (runner.Row or dicts) that have a ratio."""
    bars = [_as_dict(row) for row in rows]
    bars = [row for row in bars if row.get("ratio")]
    low, high = _decades([row["ratio"] for row in bars])

    def x_of(ratio: float) -> float:
        return LABEL_WIDTH + PLOT_WIDTH * (math.log10(ratio) - low) / (high - low)

    top = MARGIN + 24
    height = top + ROW_HEIGHT * max(len(bars), 1) + 40
    width = LABEL_WIDTH + PLOT_WIDTH + MARGIN
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="{MARGIN}" y="{MARGIN}" font-size="13">{escape(title)}</text>']
    bottom = top + ROW_HEIGHT * max(len(bars), 1)
    for power in range(low, high + 1):
        x = x_of(10.0 ** power)
        colour = "#444" if power == 0 else "#ccc"
        parts.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="{colour}"/>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{10.0 ** power:g}</text>')
    parts.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH / 2}" y="{bottom + 30}" text-anchor="middle">'
                 f'hpvm ms / peer ms (log scale; right of 1: hpvm slower)</text>')
    for index, row in enumerate(bars):
        y = top + index * ROW_HEIGHT
        one, end = x_of(1.0), x_of(row["ratio"])
        colour = "#c0392b" if row["ratio"] > 1 else "#27ae60"
        label = f'{row["program"]} {row["target"]} vs {row["peer"]}'
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>')
        parts.append(f'<rect x="{min(one, end):.1f}" y="{y + 2}" width="{abs(end - one):.1f}" '
                     f'height="{ROW_HEIGHT - 4}" fill="{colour}"><title>{escape(label)}: '
                     f'{row["ratio"]:.3g}</title></rect>')
        anchor, offset = ("start", 4) if row["ratio"] > 1 else ("end", -4)
        parts.append(f'<text x="{end + offset:.1f}" y="{y + 12}" text-anchor="{anchor}">'
                     f'{row["ratio"]:.2f}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _as_dict(row) -> dict:
    return row if isinstance(row, dict) else vars(row)
