"""``python -m benchmarks run ... --compare earlier.json``: this run's
ratios against a recorded run's, so that a regression shows at a glance.

Rows are matched by (program, target, peer).  A ratio is hpvm ms / peer
ms, measured in one run, so machines and loads cancel out as far as they
can; ``change`` is now / then, above 1 meaning hpvm lost ground.  Rows
beyond ``tolerance`` are marked (the default 10% is about this suite's
run-to-run spread on a quiet machine).
"""
from __future__ import annotations

import json
from pathlib import Path

TOLERANCE = 0.10


class CompareError(Exception):
    """The recorded file cannot be read as a suite run."""


def recorded_ratios(path: Path) -> tuple[dict, dict]:
    """((program, target, peer) -> ratio, the whole record) of a
    ``--json`` file."""
    try:
        data = json.loads(Path(path).read_text())
        rows = data["rows"]
        ratios = {(r["program"], r["target"], r["peer"]): r["ratio"] for r in rows
                  if r.get("ratio") is not None}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CompareError(f"{path}: not a recorded suite run ({type(error).__name__}: {error}); "
                           "record one with python -m benchmarks run ... --json FILE") from None
    return ratios, data


def comparison_table(rows, path: Path, size: str, tolerance: float = TOLERANCE) -> str:
    """Markdown: every row of this run with a recorded counterpart, its
    ratio then and now, the change, and a mark where it moved past
    ``tolerance``; recorded peers of programs run now but missing now
    are listed."""
    then, record = recorded_ratios(path)
    lines = [f"Compared with {path} ({record.get('command', '?')}):", ""]
    if record.get("size") != size:
        lines += [f"Note: recorded at size {record.get('size')}, this run is {size}: the ratios "
                  "measure different work.", ""]
    lines += ["| program | target | peer | ratio then | ratio now | change | |",
              "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    seen = set()
    for row in rows:
        key = (row.program, row.target, row.peer)
        if row.ratio is None or key not in then:
            continue
        seen.add(key)
        change = row.ratio / then[key]
        mark = "slower" if change > 1 + tolerance else "faster" if change < 1 - tolerance else ""
        lines.append(f"| {row.program} | {row.target} | {row.peer} | {then[key]:.2f} | "
                     f"{row.ratio:.2f} | {change:.2f}x | {mark} |")
    measured = {(row.program, row.target) for row in rows}
    missing = sorted(key for key in set(then) - seen if key[:2] in measured)
    if missing:
        lines += ["", "Recorded but not measured now: " +
                  ", ".join(f"{p}/{t}/{peer}" for p, t, peer in missing)]
    return "\n".join(lines)
