"""Intel's FPGA SDK for OpenCL offline compiler (``aoc``), when installed.

``aoc -rtl -report kernels.cl`` stops after generating RTL and writes the
HTML/JSON reports (loop II, latency, area estimates) in minutes; a full
compile (``aoc kernels.cl -o kernels.aocx``) takes hours and yields the
bitstream the FPGA platform loads.  Both run in a scratch folder; what they
produce goes into the artifact.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hpvm.errors import TargetError

REPORT_SUFFIXES = (".json", ".html", ".js", ".txt", ".log")


def find_aoc() -> str | None:
    return shutil.which("aoc")


def fpga_platform_present() -> bool:
    """An OpenCL platform of Intel's FPGA runtime (the board's driver)."""
    try:
        import pyopencl as cl
        return any("fpga" in p.name.lower() for p in cl.get_platforms())
    except Exception:  # no pyopencl, no ICD loader, no platform
        return False


def run_aoc(source: str, full: bool, board: str | None, flags: list[str]) -> dict[str, bytes]:
    """Compile ``source`` with aoc; the reports (and with ``full`` the
    .aocx) as artifact files under ``aoc/``.  TargetError with the end of
    aoc's log when it fails."""
    aoc = find_aoc()
    if aoc is None:
        raise TargetError("fpga_aoc: aoc is not on PATH (fix: install Intel's FPGA SDK for "
                          "OpenCL and source its init_opencl.sh, or use the emulation)")
    with tempfile.TemporaryDirectory(prefix="hpvm-aoc-") as folder:
        work = Path(folder)
        (work / "kernels.cl").write_text(source)
        command = [aoc] + (["-o", "kernels.aocx"] if full else ["-rtl", "-report"])
        command += ([f"-board={board}"] if board else []) + list(flags) + ["kernels.cl"]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        log = done.stdout + done.stderr
        if done.returncode != 0:
            tail = "\n".join(log.strip().splitlines()[-15:])
            kept = Path(tempfile.mkdtemp(prefix="hpvm-aoc-failed-"))
            shutil.copytree(work, kept, dirs_exist_ok=True)
            raise TargetError(f"fpga_aoc: aoc failed (exit {done.returncode}) on the generated "
                              f"kernels.cl:\n{tail}\n(fix: the source and aoc's output are kept "
                              f"in {kept}; place the node elsewhere with a hint, or report the "
                              "line to hpvm-fpga-aoc's authors)")
        files = {"aoc/aoc.log": log.encode()}
        for path in sorted(work.rglob("*")):
            relative = path.relative_to(work).as_posix()
            if path.is_file() and (path.suffix in REPORT_SUFFIXES and "reports" in relative
                                   or path.suffix == ".aocx"):
                files[f"aoc/{relative}"] = path.read_bytes()
        if full and "aoc/kernels.aocx" not in files:
            raise TargetError("fpga_aoc: aoc reported success but wrote no kernels.aocx")
        return files
