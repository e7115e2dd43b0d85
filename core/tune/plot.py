"""A tuning record drawn as SVG (hand-written, no plotting library): every
sample's first objective against the sample number, infeasible samples as
red crosses on the top edge, and the best so far as a step line; with two
objectives, a second panel with every feasible sample and the Pareto front.

    from hpvm.tune.plot import record_svg
    Path("tuning.svg").write_text(record_svg(record, title="edge on cpu"))
"""
from __future__ import annotations

import math
from html import escape

from .record import TuningRecord

WIDTH, HEIGHT, MARGIN = 640, 300, 60


def record_svg(record: TuningRecord, title: str = "") -> str:
    panels = [_progress_panel(record, 0)]
    if len(record.objectives) >= 2:
        panels.append(_pareto_panel(record, HEIGHT + 30))
    return svg_page(title or "tuning", panels)


def svg_page(title: str, panels: list[list[str]]) -> str:
    """An SVG document of ``panels`` (lists of elements, each drawn at its
    own top: 0, HEIGHT + 30, ...) under ``title``."""
    height = (HEIGHT + 30) * len(panels) + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH + 2 * MARGIN}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             f'<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{MARGIN}" y="18" font-size="13">{escape(title)}</text>']
    for panel in panels:
        parts.extend(panel)
    parts.append("</svg>")
    return "\n".join(parts)


class Axes:
    """A log-scaled y axis (objectives span decades; ``log_y=False``: a
    linear one) over a linear x axis."""

    def __init__(self, top: float, x_range: tuple[float, float], y_values: list[float],
                 log_x: bool = False, log_y: bool = True, x_text=None):
        self.top = top
        self.x_text = x_text or short
        """How an x tick's value is written."""
        self.log_x, self.log_y = log_x, log_y
        self.x0, self.x1 = (math.log10(v) for v in x_range) if log_x else x_range
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1
        low, high = max(min(y_values), 1e-12), max(max(y_values), 1e-12)
        if log_y:
            self.y0 = math.floor(math.log10(low) * 4) / 4
            self.y1 = max(math.ceil(math.log10(high) * 4) / 4, self.y0 + 0.25)
        else:
            pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
            self.y0, self.y1 = low - pad, high + pad

    def x(self, value: float) -> float:
        value = math.log10(value) if self.log_x else value
        return MARGIN + WIDTH * (value - self.x0) / (self.x1 - self.x0)

    def _scale(self, value: float) -> float:
        return math.log10(max(value, 1e-12)) if self.log_y else value

    def y(self, value: float) -> float:
        fraction = (self._scale(value) - self.y0) / (self.y1 - self.y0)
        return self.top + 30 + (HEIGHT - 40) * (1 - fraction)

    def frame(self, x_label: str, y_label: str) -> list[str]:
        bottom = self.top + HEIGHT - 10
        parts = [f'<rect x="{MARGIN}" y="{self.top + 30}" width="{WIDTH}" height="{HEIGHT - 40}" '
                 f'fill="none" stroke="#888"/>',
                 f'<text x="{MARGIN + WIDTH / 2}" y="{bottom + 26}" text-anchor="middle">'
                 f'{escape(x_label)}</text>',
                 f'<text x="14" y="{self.top + HEIGHT / 2}" transform="rotate(-90 14 '
                 f'{self.top + HEIGHT / 2})" text-anchor="middle">{escape(y_label)}</text>']
        steps = 4
        for i in range(steps + 1):
            raw = self.y0 + (self.y1 - self.y0) * i / steps
            value = 10 ** raw if self.log_y else raw
            y = self.y(value)
            parts.append(f'<line x1="{MARGIN - 4}" y1="{y:.1f}" x2="{MARGIN + WIDTH}" y2="{y:.1f}" '
                         f'stroke="#eee"/><text x="{MARGIN - 6}" y="{y + 4:.1f}" '
                         f'text-anchor="end">{short(value)}</text>')
        for i in range(steps + 1):
            raw = self.x0 + (self.x1 - self.x0) * i / steps
            value = 10 ** raw if self.log_x else raw
            parts.append(f'<text x="{self.x(value):.1f}" y="{bottom + 12}" '
                         f'text-anchor="middle">{self.x_text(value)}</text>')
        return parts


def _progress_panel(record: TuningRecord, top: float) -> list[str]:
    name = record.objectives[0]
    points = [(s.index, s.objectives[name]) for s in record.feasible()]
    if not points:
        return [f'<text x="{MARGIN}" y="{top + 50}">no feasible sample</text>']
    axes = Axes(top, (0, max(len(record.samples) - 1, 1)), [v for _, v in points])
    parts = axes.frame("sample", f"{name} (log scale)")
    parts.extend(f'<circle cx="{axes.x(i):.1f}" cy="{axes.y(v):.1f}" r="2.5" fill="#7f8c8d">'
                 f'<title>sample {i}: {short(v)}</title></circle>' for i, v in points)
    for sample in record.samples:
        if not sample.feasible:
            x, y = axes.x(sample.index), top + 36
            parts.append(f'<path d="M{x - 3:.1f},{y - 3} l6,6 m0,-6 l-6,6" stroke="#c0392b">'
                         f'<title>sample {sample.index}: {escape(sample.error)}</title></path>')
    steps, previous = [], None
    for index, best in enumerate(record.best_so_far()):
        if best is None:
            continue
        if previous is not None:
            steps.append(f"L{axes.x(index):.1f},{axes.y(previous):.1f}")
        steps.append(f"{'M' if not steps else 'L'}{axes.x(index):.1f},{axes.y(best):.1f}")
        previous = best
    parts.append(f'<path d="{" ".join(steps)}" fill="none" stroke="#2980b9" stroke-width="2"/>')
    parts.append(f'<text x="{MARGIN + WIDTH}" y="{top + 24}" text-anchor="end" fill="#2980b9">'
                 f'best so far: {short(previous)}</text>')
    return parts


def _pareto_panel(record: TuningRecord, top: float) -> list[str]:
    first, second = record.objectives[:2]
    points = [s for s in record.feasible() if second in s.objectives]
    if not points:
        return []
    xs = [s.objectives[first] for s in points]
    axes = Axes(top, (min(xs), max(xs) * 1.0001), [s.objectives[second] for s in points],
                 log_x=True)
    parts = axes.frame(f"{first} (log scale)", f"{second} (log scale)")
    parts.extend(f'<circle cx="{axes.x(s.objectives[first]):.1f}" '
                 f'cy="{axes.y(s.objectives[second]):.1f}" r="2.5" fill="#bdc3c7"/>' for s in points)
    front = record.pareto_front()
    path = " ".join(f"{'M' if i == 0 else 'L'}{axes.x(s.objectives[first]):.1f},"
                    f"{axes.y(s.objectives[second]):.1f}" for i, s in enumerate(front))
    parts.append(f'<path d="{path}" fill="none" stroke="#e67e22" stroke-width="2"/>')
    parts.extend(f'<circle cx="{axes.x(s.objectives[first]):.1f}" '
                 f'cy="{axes.y(s.objectives[second]):.1f}" r="4" fill="#e67e22">'
                 f'<title>sample {s.index}</title></circle>' for s in front)
    parts.append(f'<text x="{MARGIN + WIDTH}" y="{top + 24}" text-anchor="end" fill="#e67e22">'
                 f'Pareto front: {len(front)} of {len(points)} feasible samples</text>')
    return parts


def short(value: float) -> str:
    return f"{value:.3g}"
