"""fixedfunc's recognition report over the corpus of independently written
kernels (plugins/fixedfunc/tests/corpus/): per signature, the variants
claimed and the near-miss mutants refused, and how long recognition takes
per kernel node, cold (no cached PDG or probe).

    .venv/bin/python benchmarks/fixedfunc_corpus_bench.py [--repeat 3]

Each variant's time is the median of ``--repeat`` cold recognitions of its
whole program, divided by its kernel nodes; it includes building the PDG,
matching every signature's patterns and binding rules, and the probe.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "plugins" / "fixedfunc" / "tests" / "corpus"
SIGNATURES = ("fft", "viterbi", "gemm", "fir")


def recognised(module):
    """(claims, misses) over every graph of ``module``; each node's misses
    nearest first (refusals after the structure matched, then the
    patterns found furthest)."""
    from hpvm_fixedfunc.recognise import nearest_first, recognise
    claims, misses = {}, {}
    for graph in module.graphs.values():
        result = recognise(module, graph)
        claims.update(result.claims)
        misses.update({node: [str(r) for r in nearest_first(reasons)]
                       for node, reasons in result.misses.items()})
    return claims, misses


def cold_seconds(module, repeat: int) -> float:
    from hpvm_fixedfunc.recognise import clear_caches
    times = []
    for _ in range(repeat):
        clear_caches()
        began = time.perf_counter()
        recognised(module)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    from hpvm.frontend.compile import load_python_file
    from hpvm.ir.text import parse_module, print_module
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print("| signature | variant | claimed (form) | ms per node | mutant | refused, because |")
    print("| --- | --- | --- | ---: | --- | --- |")
    totals = {}
    for signature in SIGNATURES:
        for variant in load_python_file(CORPUS / f"{signature}.py").VARIANTS:
            program = variant["program"]
            module = program if hasattr(program, "graphs") else program.build()
            claims, _ = recognised(module)
            forms = sorted({c.form for c in claims.values() if c.signature == signature})
            nodes = sum(len(graph.nodes) for graph in module.graphs.values())
            per_node = cold_seconds(module, args.repeat) / max(nodes, 1) * 1e3
            old, new, change, _ = variant["mutant"]
            mutant_claims, misses = recognised(parse_module(print_module(module).replace(old, new)))
            reasons = [r for node in misses.values() for r in node
                       if r.startswith(f"{signature} (")]
            refused = not mutant_claims
            reason = reasons[0].replace("|", "/").split(": graph '@")[0] if reasons else "-"
            claimed = bool(forms)
            done = totals.setdefault(signature, [0, 0, 0])
            done[0] += 1
            done[1] += claimed
            done[2] += refused
            form = f"yes ({', '.join(forms)})" if claimed else "NO"
            print(f"| {signature} | {variant['name']} | {form} | {per_node:.0f} | {change} "
                  f"| {'yes' if refused else 'NO'}: {reason[:120]} |")
    print()
    print("| signature | variants | claimed | mutants refused |")
    print("| --- | ---: | ---: | ---: |")
    for signature, (count, claimed, refused) in totals.items():
        print(f"| {signature} | {count} | {claimed} | {refused} |")


if __name__ == "__main__":
    main()
