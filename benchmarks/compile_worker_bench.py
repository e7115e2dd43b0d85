"""What running LLVM in the compile worker costs at compile time: the
corpus (tests/corpus) compiled for cpu with an empty compile cache, with
LLVM in the worker and in this process (HPVM_COMPILE_IN_PROCESS=1), each in
a fresh Python process.

    python benchmarks/compile_worker_bench.py --repeat 3
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_RUN = """
import time
import hpvm
from hpvm.frontend.compile import load_python_file
corpus = load_python_file({corpus!r}).CORPUS
began = time.perf_counter()
for program in corpus:
    hpvm.compile(program.build(), targets=["cpu"])
print(time.perf_counter() - began)
"""


def compile_seconds(in_process: bool) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "HPVM_CACHE_DIR": cache}
        env.pop("HPVM_COMPILE_IN_PROCESS", None)
        if in_process:
            env["HPVM_COMPILE_IN_PROCESS"] = "1"
        code = ONE_RUN.format(corpus=str(ROOT / "tests" / "corpus" / "programs.py"))
        result = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                capture_output=True, text=True)
        return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for label, in_process in (("compile worker", False), ("in process", True)):
        times = [compile_seconds(in_process) for _ in range(args.repeat)]
        print(f"{label:<15} " + ", ".join(f"{t:.2f} s" for t in times))


if __name__ == "__main__":
    main()
