"""fixedfunc: how long recognising each MachSuite kernel takes, and how much
faster the matched kernels run on the (emulated) fixed-function
accelerators than the same kernels compiled for the cpu and gpu_opencl
targets, in the same run.

    .venv/bin/python benchmarks/fixedfunc_bench.py [--size large] [--repeat 5]
        [--targets cpu,gpu_opencl] [--backend auto] [--json PATH]

Recognition is timed cold (no cached PDG or probe): ``structure`` is
building the kernel's PDG and matching every signature's patterns and
binding rules, per kernel node; ``probe`` runs the matched group on the
interpreter at two sizes.  Run times are medians of ``--repeat`` runs of
the whole program (inputs copied in, outputs out), each checked against the
benchmark's reference.  The accelerators are emulated (``--backend``: numpy,
or torch on CUDA), which the table says.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.approx_support import command_line, markdown_table, parse_list, write_rows  # noqa: E402
from benchmarks.onnx_bench import median_ms  # noqa: E402
from benchmarks.programs import ms_fft, ms_gemm, ms_viterbi  # noqa: E402

BENCHMARKS = [ms_fft.BENCHMARKS[0], ms_viterbi.BENCHMARKS[0], ms_gemm.BENCHMARKS[0]]


@dataclass
class Row:
    kernel: str
    signature: str
    nodes: int
    structure_ms: float
    probe_ms: float
    backend: str
    fixedfunc_ms: float
    peers_ms: dict


def recognition_ms(module) -> tuple[str, int, float, float]:
    """(signature, nodes claimed, ms of structure matching per kernel node,
    ms of the rest: grouping and the probe), cold."""
    from hpvm_fixedfunc import recognise
    recognise.clear_caches()
    began = time.perf_counter()
    result = recognise.recognise(module, module.root_graph)
    total = time.perf_counter() - began
    structure = sum(result.seconds.values())
    (signature,) = {claim.signature for claim in result.claims.values()}
    return signature, len(result.claims), structure / len(result.seconds) * 1e3, (total - structure) * 1e3


def measure(benchmark, size: str, targets: list[str], backend: str, repeat: int) -> Row:
    import hpvm
    inputs = benchmark.make_inputs(size, np.random.default_rng(0))
    expected = benchmark.reference({k: v.copy() for k, v in inputs.items()})

    def timed(target: str, options: dict) -> float:
        exe = hpvm.compile(benchmark.program, targets=[target], options=options)
        out = exe(**{k: v.copy() for k, v in inputs.items()})
        for key, value in expected.items():
            np.testing.assert_allclose(out[key], value, rtol=benchmark.rtol, atol=benchmark.atol,
                                       err_msg=f"{benchmark.name} on {target}")
        return median_ms(lambda: exe(**inputs), repeat)

    signature, nodes, structure, probe = recognition_ms(benchmark.program.build())
    ours = timed("fixedfunc", {"backend": backend})
    from hpvm_fixedfunc.backends import make_backend
    return Row(benchmark.name, signature, nodes, structure, probe, make_backend(backend).detail, ours,
               {target: timed(target, {}) for target in targets})


def table(rows: list[Row], targets: list[str]) -> str:
    columns = ["kernel", "signature", "nodes", "structure ms / kernel", "probe ms", "fixedfunc ms (emulated)"]
    columns += [f"{t} ms" for t in targets] + [f"speedup vs {t}" for t in targets]
    return markdown_table(columns, [
        [r.kernel, r.signature, str(r.nodes), f"{r.structure_ms:.1f}", f"{r.probe_ms:.0f}", f"{r.fixedfunc_ms:.2f}",
         *(f"{r.peers_ms[t]:.2f}" for t in targets),
         *(f"{r.peers_ms[t] / r.fixedfunc_ms:.1f}x" for t in targets)] for r in rows])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--targets", type=parse_list, default=["cpu", "gpu_opencl"])
    parser.add_argument("--backend", default="auto", help="fixedfunc's backend (numpy, torch:cuda ...)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    print(f"command: {command_line('fixedfunc_bench.py', argv)}\n")
    rows = []
    for benchmark in BENCHMARKS:
        rows.append(measure(benchmark, args.size, args.targets, args.backend, args.repeat))
        print(table(rows[-1:], args.targets), file=sys.stderr)
    print(table(rows, args.targets))
    print(f"\nfixedfunc backend: {rows[0].backend} (an emulation: no ESP accelerator here)")
    write_rows(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
