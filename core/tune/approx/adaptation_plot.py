"""Run-time adaptation drawn: each run's latency against the goal, and the
QoS of the configuration it ran, over the runs (``exe.adaptation_history``
of an executable with a latency goal)."""
from __future__ import annotations

from html import escape

from ..plot import HEIGHT, MARGIN, WIDTH, Axes, short, svg_page


def adaptation_svg(history: list[tuple[int, float, int]], configurations: list[dict],
                   goal_ms: float, title: str = "run-time adaptation",
                   load: list[bool] | None = None) -> str:
    """Two panels: latency (ms, log scale) with the goal, and the QoS of
    the configuration each run used; ``load`` marks runs under injected
    load (shaded)."""
    if not history:
        return svg_page(title, [[f'<text x="{MARGIN}" y="50">no runs under a goal</text>']])
    runs = [run for run, _, _ in history]
    latency = [seconds * 1e3 for _, seconds, _ in history]
    qos = [configurations[index]["qos"] for _, _, index in history]
    span = (min(runs), max(max(runs), min(runs) + 1))
    top = Axes(0, span, latency + [goal_ms])
    parts = top.frame("run", "latency ms (log scale)") + _shade(top, runs, load, 0)
    parts.append(_line(top, runs, latency, "#2980b9"))
    y = top.y(goal_ms)
    parts.append(f'<line x1="{MARGIN}" y1="{y:.1f}" x2="{MARGIN + WIDTH}" y2="{y:.1f}" '
                 f'stroke="#c0392b" stroke-dasharray="4 3"/><text x="{MARGIN + WIDTH}" '
                 f'y="{y - 4:.1f}" text-anchor="end" fill="#c0392b">goal {short(goal_ms)} ms</text>')
    below = Axes(HEIGHT + 30, span, [max(q, 1e-9) for q in qos], log_y=False)
    lower = below.frame("run", "QoS of the configuration in use") + _shade(below, runs, load,
                                                                          HEIGHT + 30)
    lower.append(_line(below, runs, qos, "#27ae60"))
    lower.append(f'<text x="{MARGIN + WIDTH}" y="{HEIGHT + 54}" text-anchor="end">shaded: '
                 f'injected load; {escape(str(len(set(i for *_, i in history))))} '
                 'configurations used</text>')
    return svg_page(title, [parts, lower])


def _line(axes: Axes, xs, ys, colour: str) -> str:
    path = " ".join(f"{'M' if i == 0 else 'L'}{axes.x(x):.1f},{axes.y(y):.1f}"
                    for i, (x, y) in enumerate(zip(xs, ys)))
    return f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>'


def _shade(axes: Axes, runs, load, top: float) -> list[str]:
    if not load:
        return []
    width = WIDTH / max(len(runs), 1)
    return [f'<rect x="{axes.x(run) - width / 2:.1f}" y="{top + 30}" width="{width:.1f}" '
            f'height="{HEIGHT - 40}" fill="#f6ddcc"/>' for run, loaded in zip(runs, load)
            if loaded]
