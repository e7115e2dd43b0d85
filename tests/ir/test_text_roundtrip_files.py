"""Round trips of the .hpvm text form: every .hpvm file in the repository
is canonical (printing its module gives the file back byte for byte), and
random valid modules survive print -> parse unchanged."""
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from hpvm.ir.testing import expressions, modules
from hpvm.ir.text import parse_module, print_expr, print_module
from hpvm.ir import Graph, KernelFunction, Let, Module, Parameter

REPO = Path(__file__).resolve().parents[2]
# Deliberately broken or non-canonical fixtures live in folders with these names.
SKIPPED_FOLDERS = {"invalid", "noncanonical"}


def _hpvm_files() -> list[Path]:
    files = []
    for path in sorted(REPO.rglob("*.hpvm")):
        parts = path.relative_to(REPO).parts
        if any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts[:-1]):
            continue
        files.append(path)
    return files


FILES = _hpvm_files()


def test_examples_are_found():
    names = {p.name for p in FILES}
    assert {"matmul.hpvm", "blur.hpvm", "pipeline.hpvm", "hierarchy.hpvm",
            "lenet_tiny.hpvm"} <= names


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_file_is_canonical(path):
    text = path.read_text(encoding="utf-8")
    assert print_module(parse_module(text, str(path))) == text


def _check_roundtrip(module: Module) -> None:
    text = print_module(module)
    again = parse_module(text)
    assert again == module, text
    assert print_module(again) == text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_random_valid_module_round_trips(module):
    _check_roundtrip(module)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(weird_names=True, decorations=True))
def test_random_module_with_quoted_names_and_attributes_round_trips(module):
    _check_roundtrip(module)



@settings(max_examples=100, deadline=None)
@given(expressions(max_depth=4))
def test_random_expression_round_trips(expr):
    from hpvm.ir.types import F32, F64, I32, I64
    params = tuple(Parameter(f"{t}_var", t) for t in (I32, I64, F32, F64))
    kernel = KernelFunction("k", params, (Let("r", expr.type, expr),))
    module = Module("t", {"k": kernel}, {"main": Graph("main", ())}, "main")
    _check_roundtrip(module)
    assert print_expr(expr) in print_module(module)


def test_example_in_the_format_document_is_canonical():
    document = (REPO / "docs" / "text-format.md").read_text(encoding="utf-8")
    example = document.split("```\nhpvm 1.0\n", 1)[1].split("```", 1)[0]
    text = "hpvm 1.0\n" + example
    assert print_module(parse_module(text)) == text
