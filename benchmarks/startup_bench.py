"""How long the ``hpvm`` command takes to start: commands that do little
(``--help``, ``--version``, ``compile --help``, ``ir FILE``, ``targets``),
each in a fresh process, this checkout against another one (an earlier
commit, say) in the same run, interleaved.

    git worktree add /tmp/base <commit>
    .venv/bin/python benchmarks/startup_bench.py --base /tmp/base [--runs 11]

Each process loads ``ROOT/core`` as the package ``hpvm`` (the plugins are
the installed ones) and calls ``hpvm.cli.main``; the table gives medians
and the ratio this / base.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (["--help"], ["--version"], ["compile", "--help"],
            ["ir", "examples/ir/lenet_tiny.hpvm"], ["targets"])

RUN_CLI = """
import contextlib, importlib.util, io, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "hpvm", f"{root}/core/__init__.py", submodule_search_locations=[f"{root}/core"])
package = importlib.util.module_from_spec(spec)
sys.modules["hpvm"] = package
spec.loader.exec_module(package)
from hpvm.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    sys.exit(main(sys.argv[2:]))
"""


def seconds(root: Path, argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN_CLI, str(root), *argv], check=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="another checkout of hpvm")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    print("| command | base ms | this ms | this / base |\n| --- | --- | --- | --- |")
    for argv in COMMANDS:
        times = {"base": [], "this": []}
        for _ in range(args.runs):
            times["base"].append(seconds(args.base.resolve(), argv))
            times["this"].append(seconds(ROOT, argv))
        base, this = (statistics.median(times[k]) for k in ("base", "this"))
        print(f"| `hpvm {' '.join(argv)}` | {base * 1000:.0f} | {this * 1000:.0f} | "
              f"{this / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
