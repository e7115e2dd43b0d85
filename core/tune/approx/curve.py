"""The result of approximation tuning: a Pareto curve of configurations,
QoS against speedup, that ships with the executable.

Each :class:`ApproxPoint` is a configuration (node -> knob) with its
measured QoS score and speedup over the exact program on the machine it
was measured on (and, from predictive tuning, what was predicted).  The
first point is always the exact program.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from html import escape

from ...errors import HpvmError
from ..plot import MARGIN, WIDTH, Axes, short, svg_page

CURVE_FORMAT = 1
SIMILARITIES = ("psnr", "ssim")
"""QoS measures that score outputs against the exact program's."""


@dataclass(frozen=True)
class ApproxPoint:
    knobs: dict
    qos: float
    speedup: float
    seconds: float
    predicted_qos: float | None = None
    predicted_speedup: float | None = None

    def describe(self) -> str:
        return ", ".join(f"{node}:{knob}" for node, knob in sorted(self.knobs.items())) or "exact"


@dataclass
class ApproxCurve:
    """Points from the exact program (first) to the fastest acceptable
    one; ``qos_name`` / ``qos_unit`` say what ``qos`` measures,
    ``baseline_qos`` is the exact program's score, ``goal`` the constraint
    in words, ``machine`` where the speedups were measured."""

    points: list[ApproxPoint]
    qos_name: str
    qos_unit: str
    baseline_qos: float
    goal: str
    targets: list[str]
    machine: str = ""
    notes: list[str] = field(default_factory=list)
    input_shapes: dict = field(default_factory=dict)
    """Shapes of the inputs tuned on (what refinement runs on)."""

    def __len__(self) -> int:
        return len(self.points)

    def loss(self, point: ApproxPoint) -> float:
        return self.baseline_qos - point.qos

    def format(self) -> str:
        unit = "points" if self.qos_unit == "%" else self.qos_unit
        lines = [f"{'#':>2}  {'speedup':>7}  {self.qos_name + ' (' + unit + ')':>16}  "
                 f"{'loss':>6}  configuration"]
        for index, point in enumerate(self.points):
            lines.append(f"{index:>2}  {point.speedup:>6.2f}x  {point.qos:>16.3f}  "
                         f"{self.loss(point):>6.2f}  {point.describe()}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"format": CURVE_FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> "ApproxCurve":
        if not isinstance(data, dict) or data.get("format") != CURVE_FORMAT:
            raise HpvmError("the approximation curve is not in format "
                            f"{CURVE_FORMAT}; tune it again with this hpvm")
        try:
            points = [ApproxPoint(**p) for p in data["points"]]
            fields = {k: data[k] for k in ("qos_name", "qos_unit", "baseline_qos", "goal",
                                           "targets")}
        except (KeyError, TypeError) as error:
            raise HpvmError(f"the approximation curve is malformed ({error!r}); tune it "
                            "again") from None
        return cls(points, **fields, machine=data.get("machine", ""),
                   notes=list(data.get("notes", [])),
                   input_shapes=dict(data.get("input_shapes", {})))

    def to_text(self) -> str:
        """The curve as JSON text."""
        return json.dumps(self.to_json(), indent=1)

    def svg(self, title: str = "") -> str:
        """QoS loss against speedup: the curve, with predictions (hollow)
        where predictive tuning made them."""
        losses = [self.loss(p) for p in self.points]
        predicted = [(self.baseline_qos - p.predicted_qos, p.predicted_speedup)
                     for p in self.points if p.predicted_qos is not None
                     and p.predicted_speedup is not None]
        xs = losses + [x for x, _ in predicted]
        ys = [p.speedup for p in self.points] + [y for _, y in predicted]
        span = (min(xs + [0.0]), max(xs + [0.0]) + 1e-9)
        unit = "points" if self.qos_unit == "%" else self.qos_unit
        label, x_text = f"{self.qos_name} loss ({unit})", None
        if self.qos_name in SIMILARITIES:
            # Scored against the exact output, whose score is a cap (100 dB,
            # 1.0): the score itself reads better than its distance to the cap.
            label = f"{self.qos_name} ({unit}), exact = {short(self.baseline_qos)}"
            x_text = lambda loss: short(self.baseline_qos - loss)  # noqa: E731
        axes = Axes(0, span, [min(ys + [1.0]) * 0.95, max(ys) * 1.05], x_text=x_text)
        parts = axes.frame(label.replace(" ()", ""), "speedup (log scale)")
        path = " ".join(f"{'M' if i == 0 else 'L'}{axes.x(x):.1f},{axes.y(p.speedup):.1f}"
                        for i, (x, p) in enumerate(zip(losses, self.points)))
        parts.append(f'<path d="{path}" fill="none" stroke="#2980b9" stroke-width="2"/>')
        parts.extend(f'<circle cx="{axes.x(x):.1f}" cy="{axes.y(y):.1f}" r="4" fill="none" '
                     f'stroke="#e67e22"><title>predicted</title></circle>' for x, y in predicted)
        parts.extend(f'<circle cx="{axes.x(x):.1f}" cy="{axes.y(p.speedup):.1f}" r="4" '
                     f'fill="#2980b9"><title>{escape(p.describe())}: {short(p.speedup)}x, '
                     f'{short(p.qos)}</title></circle>' for x, p in zip(losses, self.points))
        parts.append(f'<text x="{MARGIN + WIDTH}" y="24" text-anchor="end" fill="#2980b9">'
                     f'{len(self.points)} configurations; {escape(self.goal)}; measured '
                     f'(filled) and predicted (hollow)</text>')
        return svg_page(title or f"approximation tuning on {','.join(self.targets)}", [parts])
