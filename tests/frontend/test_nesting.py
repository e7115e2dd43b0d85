"""Python kernels nested deeper than the IR allows are refused with a
located message, before translation recurses over them."""
import pytest

from hpvm.frontend import FrontendError
from hpvm.frontend.compile import compile_program


def write_program(tmp_path, terms: int, expression: str | None = None):
    path = tmp_path / "deep.py"
    path.write_text(
        "import hpvm\nfrom hpvm.lang import Buffer, f32, parallel_loop\n\n"
        "@hpvm.program\ndef deep(A: Buffer[f32, 'N'], B: Buffer[f32, 'N']):\n"
        "    for i in parallel_loop(N, ins=(A,), outs=(B,), name='k'):\n"
        "        B[i] = " + (expression or " + ".join(["A[i]"] * terms)) + "\n")
    return path


def test_a_kernel_nested_too_deep_is_refused_at_its_line(tmp_path):
    path = write_program(tmp_path, 500)
    with pytest.raises(FrontendError) as info:
        compile_program(f"{path}:deep")
    [diagnostic] = info.value.diagnostics
    assert diagnostic.location.line == 7 and "nested more than 100 levels deep" in diagnostic.message


@pytest.mark.parametrize("expression", [" + ".join(["A[i]"] * 5000),
                                        "(" * 1000 + "A[i]" + ")" * 1000],
                         ids=["chain", "parentheses"])
def test_code_too_deep_for_python_or_hpvm_is_refused_naming_the_file(tmp_path, expression):
    # Which refuses it depends on the Python version: its parser (too many
    # nested parentheses), its compiler (recursion), or hpvm's own limit.
    path = write_program(tmp_path, 0, expression)
    with pytest.raises(FrontendError) as info:
        compile_program(f"{path}:deep")
    message = str(info.value)
    assert str(path) in message
    assert any(words in message for words in (
        "Python cannot compile it: the code nests too deeply", "too many nested parentheses",
        "nested more than 100 levels deep")), message


def test_a_kernel_within_the_limit_compiles(tmp_path):
    path = write_program(tmp_path, 40)
    assert compile_program(f"{path}:deep").functions
