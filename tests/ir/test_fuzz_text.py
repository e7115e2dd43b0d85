"""Fuzzing the text form: valid ``.hpvm`` modules (the examples and the
corpus), mutated by hypothesis (bytes deleted, repeated, replaced; tokens
and extreme numbers inserted; lines swapped), go through parse, verify,
print and parse again.  Every outcome is a success or an HpvmError that
says where: never another exception, never a RecursionError.

CI runs a fixed, derandomised budget of 2,000 modules;
``HPVM_FUZZ_EXAMPLES=100000`` runs more (and random ones) on demand."""
import os
import re
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hpvm.errors import DiagnosticError, HpvmError  # noqa: E402
from hpvm.frontend.compile import load_python_file  # noqa: E402
from hpvm.ir.text import parse_module, print_module  # noqa: E402
from hpvm.ir.verify import verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("HPVM_FUZZ_EXAMPLES", "2000"))
TOKENS = ["(", ")", "{", "}", "[", "]", ",", ":", "->", "=", "..", "@main", "@k", "f32", "i64",
          "u8", "bool", "let", "for", "while", "if", "else", "node", "graph", "func", "in",
          "out", "inout", "restrict", "instance_id(0)", "select", "sqrt", "0", "-1", "7",
          "99999999999999999999999", "-9223372036854775809", "1e999", "nan", "inf", "0x10",
          "f16(65504.0)", "\n", "\t", " ", "\x00", "é", "🙂", "//", "#", "\"", "\\", "step 0",
          "[unroll = 0]", "stream", "constant", "root @nowhere", "hpvm 9.9"]


NUMBERS = ["0", "1", "-1", "2", "3", "65536", "99999999999", "9223372036854775807",
           "99999999999999999999999", "1.5", "1e999", "-0.0"]
WORD = re.compile(r"[A-Za-z_@%][\w.]*|\d+(?:\.\d+)?")


def seed_texts() -> list[str]:
    texts = [path.read_text() for path in sorted((ROOT / "examples" / "ir").glob("*.hpvm"))]
    corpus = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
    texts += [print_module(program.build()) for program in corpus]
    return texts


SEEDS = seed_texts()


@st.composite
def mutated_module(draw) -> str:
    text = draw(st.sampled_from(SEEDS))
    # Half the modules get only token swaps, which mostly still parse and so
    # reach the verifier; the others get any mutation, mostly parse errors.
    kinds = (["retoken"] if draw(st.booleans()) else
             ["retoken", "delete", "repeat", "insert", "replace", "swap_lines"])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        at = draw(st.integers(0, len(text)))
        span = draw(st.integers(1, 40))
        words = list(WORD.finditer(text))
        if kind == "retoken" and words:
            # A name or number swapped for another of the module's, a type, or
            # an extreme number: text that still parses, with a wrong meaning.
            word = draw(st.sampled_from(words))
            choices = NUMBERS if word[0][0].isdigit() else sorted({w[0] for w in words})
            text = text[:word.start()] + draw(st.sampled_from(choices)) + text[word.end():]
        elif kind == "delete":
            text = text[:at] + text[at + span:]
        elif kind == "repeat":
            text = text[:at] + text[at:at + span] * draw(st.integers(2, 50)) + text[at:]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at:]
        elif kind == "replace":
            text = text[:at] + draw(st.sampled_from(TOKENS)) + text[at + span:]
        else:
            lines = text.split("\n")
            i, j = (draw(st.integers(0, len(lines) - 1)) for _ in range(2))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def has_location(error: HpvmError) -> bool:
    if isinstance(error, DiagnosticError):
        return all(str(d.location) for d in error.diagnostics)
    return "<text>" in str(error)


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          derandomize="HPVM_FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=list(HealthCheck))
@given(mutated_module())
def test_mutated_modules_parse_or_fail_with_a_located_error(text):
    try:
        module = parse_module(text)
        verify(module)
    except HpvmError as error:
        assert has_location(error), f"error without a location: {error}"
        return
    printed = print_module(module)
    assert print_module(parse_module(printed)) == printed
    run_briefly(module)


class _Slow(Exception):
    pass


def run_briefly(module) -> None:
    """Run a module that verifies on the interpreter with small random
    inputs, for at most a second (a mutated loop bound may never end)."""
    import signal

    import hpvm
    from hpvm.testing import random_inputs
    if module.root_graph.is_streaming:
        return

    def stop(signum, frame):
        raise _Slow()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        sizes = {symbol: 3 for p in module.root_graph.params
                 for symbol in getattr(p.type, "symbols", ())}
        hpvm.compile(module, targets=["interp"])(**random_inputs(module.root_graph, sizes))
    except HpvmError as error:
        assert has_location(error) or str(error), f"error without a message: {error!r}"
    except _Slow:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
