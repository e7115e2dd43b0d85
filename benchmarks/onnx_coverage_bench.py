"""How much of ONNX hpvm runs: every test case onnx ships (the kinds node,
pytorch-converted, pytorch-operator and simple), each loaded, compiled for
each hpvm target, run on its first data set and compared with the expected
outputs; onnxruntime's CPU provider on the same cases, same comparison, in
the same run.

    .venv/bin/python benchmarks/onnx_coverage_bench.py [--targets interp,cpu]
        [--cases REGEX] [--jobs N] [--timeout 60] [--json out.json] [--failures N]

A case passes when every output has the expected shape and
``|got - expected| <= atol + rtol * |expected|`` (rtol 1e-3, atol 1e-5,
NaN equal to NaN; the comparison onnx's backend tests make, a little
looser); a case that raises, times out or differs fails.  Prints the
pass count per implementation, the ONNX operators that most often stop a
case on the first hpvm target (a case can miss several), and with
``--failures N`` the first N other failures with their first error line.
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import re
import sys
import warnings

import numpy as np

RTOL, ATOL = 1e-3, 1e-5
MISSING = re.compile(r"unsupported ONNX operators: (.*)")


def all_cases() -> list:
    from hpvm.onnx_conformance import KINDS
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [case for kind in KINDS for case in load_model_tests(kind=kind)]


def same(got, expected) -> bool:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return False
    if expected.dtype.kind in "OUS":
        return bool(np.array_equal(got, expected))
    if expected.dtype.kind == "b" or got.dtype.kind == "b":
        return bool(np.array_equal(got.astype(bool), expected.astype(bool)))
    return bool(np.allclose(got.astype(np.float64), expected.astype(np.float64),
                            rtol=RTOL, atol=ATOL, equal_nan=True))


def run_case(name_and_impl: tuple[str, str]) -> tuple[str, str, str]:
    """(case, implementation, '' when it passed or the first error line)."""
    name, impl = name_and_impl
    case = _CASES[name]
    try:
        from hpvm.onnx_conformance import read_case
        model, inputs, expected = read_case(case)
        outputs = _run(impl, model, inputs)
        if len(outputs) != len(expected):
            return name, impl, f"{len(outputs)} outputs, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(outputs, expected)):
            if not same(got, want):
                return name, impl, f"output {index} differs"
        return name, impl, ""
    except BaseException as error:  # noqa: BLE001 - a benchmark records every failure
        text = str(error).strip().splitlines()
        return name, impl, f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _run(impl: str, model, inputs: list) -> list:
    if impl == "onnxruntime":
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return session.run(None, dict(zip(names, inputs)))
    from hpvm.onnx_backend import backend_for
    return list(backend_for(impl).run_model(model, inputs))


_CASES: dict = {}


def _init_worker() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _CASES.update({case.name: case for case in all_cases()})


def measure(names: list[str], impls: list[str], jobs: int, timeout: float) -> dict:
    """impl -> case -> '' (passed) or the failure."""
    results: dict[str, dict[str, str]] = {impl: {} for impl in impls}
    work = [(name, impl) for impl in impls for name in names]
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs, initializer=_init_worker, maxtasksperchild=50) as pool:
        pending = [(item, pool.apply_async(run_case, (item,))) for item in work]
        for done, ((name, impl), result) in enumerate(pending, 1):
            try:
                _, _, failure = result.get(timeout)
            except multiprocessing.TimeoutError:
                failure = f"timed out after {timeout:g} s"
            results[impl][name] = failure
            if done % 200 == 0:
                print(f"  {done}/{len(work)} runs", file=sys.stderr, flush=True)
    return results


def missing_operators(failures: dict[str, str]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for failure in failures.values():
        match = MISSING.search(failure)
        if match:
            for op in re.findall(r"([\w.]+) \(node", match.group(1)):
                counts[op] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="interp,cpu")
    parser.add_argument("--cases", default="", help="only cases whose name matches")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--failures", type=int, default=0)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    names = sorted({case.name for case in all_cases() if re.search(args.cases, case.name)})
    impls = [t for t in args.targets.split(",") if t] + ["onnxruntime"]
    results = measure(names, impls, args.jobs, args.timeout)
    print(f"{len(names)} cases on {platform.node()} ({os.cpu_count()} cores)\n")
    print("| implementation | passed | share |\n|---|---:|---:|")
    for impl in impls:
        passed = sum(1 for f in results[impl].values() if not f)
        print(f"| {impl} | {passed} | {100 * passed / max(1, len(names)):.1f}% |")
    first = results[impls[0]]
    missing = missing_operators(first)
    print(f"\nONNX operators that stop cases on {impls[0]} (cases):")
    print(", ".join(f"{op} {n}" for op, n in missing.most_common(40)))
    others = [(n, f) for n, f in sorted(first.items()) if f and not MISSING.search(f)]
    print(f"\n{len(others)} other failures on {impls[0]}")
    for name, failure in others[:args.failures]:
        print(f"  {name}: {failure}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
