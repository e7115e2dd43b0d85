"""What ``aoc -rtl -report`` measured, read back for the model.

aoc writes its report as ``reports/lib/report_data.js``: JavaScript
assignments of JSON (``var loopsJSON={...};var areaJSON='{...}';``).
``loopsJSON`` lists every loop (nested under ``children``) with its
columns ``["Pipelined", "II", "Bottleneck"]`` and its source line;
``areaJSON`` the whole system's ``total`` (ALUTs, FFs, RAMs, DSPs, ...)
including the board's static partition.  A full compile adds
``acl_quartus_report.txt`` with the achieved kernel clock.  Loops are
matched to the IR through the generated line each ``for`` sits on.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .profiles import Resources

_ASSIGNMENT = re.compile(r"var\s+(\w+)\s*=\s*")
_FMAX = re.compile(r"Kernel fmax:\s*([\d.]+)")


@dataclass
class AocReport:
    loops: dict[int, tuple[bool, int | None]] = field(default_factory=dict)
    """Source line of the ``for`` -> (pipelined, II or None)."""
    area: Resources | None = None
    fmax_mhz: float | None = None


def read_report(files: dict[str, bytes]) -> AocReport | None:
    """The report among aoc's output ``files`` (artifact names), or None
    when aoc wrote none this reader knows."""
    data = next((v for k, v in files.items() if k.endswith("reports/lib/report_data.js")), None)
    quartus = next((v for k, v in files.items() if k.endswith("acl_quartus_report.txt")), None)
    if data is None and quartus is None:
        return None
    report = AocReport()
    if data is not None:
        values = _assignments(data.decode(errors="replace"))
        for entry in values.get("loopsJSON", {}).get("functions", []):
            _collect_loops(entry, report.loops)
        area = values.get("areaJSON")
        if area and "total" in area:
            aluts, ffs, rams, dsps = (list(area["total"]) + [0, 0, 0, 0])[:4]
            report.area = Resources(aluts / 2, ffs, rams, dsps)   # 2 ALUTs per ALM
    if quartus is not None:
        found = _FMAX.search(quartus.decode(errors="replace"))
        report.fmax_mhz = float(found.group(1)) if found else None
    return report


def _assignments(text: str) -> dict:
    """``var NAME=<json>`` and ``var NAME='<json>'`` assignments."""
    values = {}
    decoder = json.JSONDecoder()
    for match in _ASSIGNMENT.finditer(text):
        rest = text[match.end():].lstrip()
        try:
            if rest.startswith("'"):
                end = rest.index("';")
                values[match.group(1)] = json.loads(rest[1:end])
            else:
                values[match.group(1)] = decoder.raw_decode(rest)[0]
        except (ValueError, json.JSONDecodeError):
            continue   # a value of a kind the model does not read
    return values


def _collect_loops(entry: dict, loops: dict) -> None:
    data = entry.get("data") or []
    debug = entry.get("debug") or []
    line = None
    if debug and debug[0] and isinstance(debug[0][0], dict):
        line = debug[0][0].get("line")
    if len(data) >= 2 and line is not None:
        pipelined = str(data[0]).strip().lower().startswith("yes")
        ii = int(data[1]) if str(data[1]).strip().isdigit() else None
        loops[int(line)] = (pipelined, ii)
    for child in entry.get("children", []) or []:
        _collect_loops(child, loops)
