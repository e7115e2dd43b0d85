"""What the approximation-tuning benchmarks (approx_bench.py for CNNs,
approx_pipelines_bench.py for kernel pipelines) share: tuning with a
progress line, the curve drawn, the result row and its markdown table."""
from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.onnx_bench import median_ms  # noqa: F401  (the benchmarks' one timing loop)


@dataclass
class Tuned:
    """One tuning run: the result and how long it took."""

    result: object
    seconds: float

    def speedups(self, acceptable) -> dict:
        """Best speedup on the curve among the points ``acceptable(point)``
        allows, per key: ``acceptable`` maps key -> predicate."""
        points = self.result.curve.points
        return {key: max(p.speedup for p in points if ok(p)) for key, ok in acceptable.items()}

    def counts(self) -> str:
        return f"{self.result.empirical_runs} / {self.result.searched}"

    def prediction_error(self) -> float:
        return self.result.agreement.get("mean_abs_error", float("nan"))


def tune(program, target: str, inputs: dict, qos, label: str, svg_dir: str | None,
         **options) -> Tuned:
    """``approx_tune`` with a progress line every 10 runs on stderr and the
    curve drawn into ``svg_dir`` (when given) as approx_<label>.svg."""
    from hpvm.tune.approx import approx_tune
    started = time.perf_counter()
    result = approx_tune(program, [target], inputs, qos, seed=0, progress=lambda text, done, total:
                         print(f"  {label} {done}/{total} {text}", file=sys.stderr)
                         if done % 10 == 0 or done == total else None, **options)
    tuned = Tuned(result, time.perf_counter() - started)
    if svg_dir:
        Path(svg_dir).mkdir(parents=True, exist_ok=True)
        Path(svg_dir, f"approx_{label.replace('/', '_')}.svg").write_text(
            result.curve.svg(label.replace("/", " on ")))
    return tuned


def markdown_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def parse_list(text: str, kind=str) -> list:
    return [kind(v.strip()) for v in text.split(",") if v.strip()]


def command_line(script: str, argv) -> str:
    """The command that ran ``script`` (for RESULTS.md)."""
    return " ".join(shlex.quote(a) for a in [".venv/bin/python", f"benchmarks/{script}",
                                             *(sys.argv[1:] if argv is None else argv)])


def add_tuning_arguments(parser, validate: int) -> None:
    """The options both benchmarks take."""
    parser.add_argument("--every", type=lambda t: parse_list(t, int), default=[2, 3, 4])
    parser.add_argument("--validate", type=int, default=validate)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--svg-dir", help="draw each curve here")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")


def run_all(names: list[str], targets: list[str], measure, table) -> list:
    """``measure(name, target)`` for every pair, each row's ``table([row])``
    printed on stderr as it comes."""
    rows = []
    for name in names:
        for target in targets:
            rows.append(measure(name, target))
            print(table(rows[-1:]), file=sys.stderr)
    return rows


def write_rows(path: str | None, rows: list) -> None:
    if path:
        Path(path).write_text(json.dumps([asdict(r) for r in rows], indent=1))
