"""Every unsupported construct and every misuse is refused with a message
located at the offending line of this file, and a fix."""
from pathlib import Path

import pytest

import hpvm.lang as hl
from hpvm.frontend import FrontendError
from hpvm.lang import Buffer, Out, buffer, f32, f64, i32, i64, instance_id, parallel_loop, task

THIS = Path(__file__).resolve()
LIST = [1, 2, 3]


def line_of(marker: str, here: Path = THIS) -> int:
    lines = here.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.rstrip().endswith(marker))


def refused(thing, marker: str, *words: str, here: Path = THIS):
    """Build ``thing``; assert a FrontendError located at the marked line
    of ``here`` whose message contains ``words`` and that has a fix."""
    with pytest.raises(FrontendError) as info:
        thing.build() if hasattr(thing, "build") else thing.function()
    diagnostic = info.value.diagnostics[0]
    assert Path(diagnostic.location.file).resolve() == here
    assert diagnostic.location.line == line_of(marker, here), str(diagnostic)
    for word in words:
        assert word in diagnostic.message, diagnostic.message
    assert diagnostic.fix
    return diagnostic


def test_list_literal_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            v = [1, 2]  # E-list
    refused(p, "E-list", "lists")


def test_class_in_kernel_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            class A:  # E-class
                pass
    refused(p, "E-class", "classes")


def test_exceptions_are_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            try:  # E-try
                x[i] = 1.0
            except ValueError:
                pass
    refused(p, "E-try", "exceptions")


def test_break_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            for k in range(3):
                break  # E-break
    refused(p, "E-break", "break")


def test_lambda_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = (lambda: 1.0)()  # E-lambda
    refused(p, "E-lambda")


def python_helper(v):
    return v


def test_call_into_arbitrary_python_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = python_helper(1.0)  # E-call
    refused(p, "E-call", "python_helper")


def test_print_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            print(i)  # E-print
    refused(p, "E-print", "print")


@hl.kernel
def countdown(n: i64) -> i64:
    return countdown(n - 1)  # E-recursion


def test_recursion_is_refused():
    @hl.program
    def p(x: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = countdown(i)
    refused(p, "E-recursion", "recursion")


@hl.kernel
def early(v: f32) -> f32:
    for k in range(3):
        return v  # E-early
    return v


def test_early_return_in_helper_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = early(x[i])
    refused(p, "E-early", "returns before its end")


def test_integer_true_division_suggests_floor_division():
    @hl.program
    def p(x: Buffer[i32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = i32(i / 2)  # E-div
    diagnostic = refused(p, "E-div", "'/'")
    assert "//" in diagnostic.fix


def test_mixing_int_and_float_needs_a_cast():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = x[i] * i  # E-mix
    diagnostic = refused(p, "E-mix", "f32", "i64")
    assert "cast" in diagnostic.fix


def test_float_literal_with_integer_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = f32(i * 0.5)  # E-floatlit
    refused(p, "E-floatlit", "float literal")


def test_narrowing_store_needs_a_cast():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = f64(x[i])  # E-narrow
    diagnostic = refused(p, "E-narrow", "f32", "f64")
    assert "f32(" in diagnostic.fix


def test_condition_must_be_bool():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            if x[i]:  # E-cond
                x[i] = 0.0
    refused(p, "E-cond", "bool")


def test_writing_an_in_only_buffer_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,), name="copy"):
            x[i] = 0.0  # E-inonly
    diagnostic = refused(p, "E-inonly", "copy", "'x'", "ins only")
    assert "outs" in diagnostic.fix


def test_reading_an_undeclared_buffer_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(y,), name="copy"):
            y[i] = x[i]  # E-undeclared
    diagnostic = refused(p, "E-undeclared", "copy", "'x'", "does not declare")
    assert "ins" in diagnostic.fix


def test_indexing_with_the_wrong_number_of_indices_is_refused():
    @hl.program
    def p(x: Buffer[f32, "H", "W"]):
        for i in parallel_loop(H, outs=(x,)):
            x[i, 0, 0] = 0.0  # E-rank
    refused(p, "E-rank", "rank 2", "3 indices")


@hl.kernel
def first(row: Buffer[f32, "W"]) -> f32:
    return row[0]


def test_passing_a_buffer_of_the_wrong_shape_to_a_helper_is_refused():
    @hl.program
    def p(x: Buffer[f32, "H", "W"], y: Buffer[f32, "H"]):
        for i in parallel_loop(H, ins=(x,), outs=(y,)):
            y[i] = first(x)  # E-shape
    refused(p, "E-shape", "f32[H, W]", "f32[W]")


def test_indexing_a_python_list_is_refused():
    @hl.program
    def p(x: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = LIST[i]  # E-pylist
    refused(p, "E-pylist", "Python list")


def test_undefined_name_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = nowhere  # noqa: F821 E-undefined
    refused(p, "E-undefined", "nowhere")


def test_kernel_cannot_return_a_value():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            return 1.0  # E-return
    refused(p, "E-return", "return")


def test_computation_at_program_level_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        n = 3 + 4  # E-toplevel
    refused(p, "E-toplevel", "program level")


def test_parallel_loop_needs_one_variable_per_size():
    @hl.program
    def p(x: Buffer[f32, "H", "W"]):
        for i in parallel_loop(H, W, outs=(x,)):  # E-dims
            x[i, 0] = 0.0
    refused(p, "E-dims", "2 size(s)", "1 loop variable")


def test_unknown_node_option_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,), tile=4):  # E-option
            x[i] = 0.0
    refused(p, "E-option", "tile")


def test_ins_must_name_buffers():
    @hl.program
    def p(x: Buffer[f32, "N"], a: f32):
        for i in parallel_loop(N, ins=(a,), outs=(x,)):  # E-insname
            x[i] = a
    refused(p, "E-insname", "'a'")


def test_reading_an_intermediate_buffer_before_it_is_written_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        tmp = buffer(f32, ("N",))
        for i in parallel_loop(N, ins=(tmp,), outs=(x,), name="use"):  # E-unwritten
            x[i] = tmp[i]
    refused(p, "E-unwritten", "use", "'tmp'", "before any node writes it")


def test_an_out_parameter_never_written_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):  # E-neverwritten
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = 0.0
    refused(p, "E-neverwritten", "'y'", "never written")


def test_missing_annotation_is_refused():
    @hl.program
    def p(x):  # E-annotation
        pass
    diagnostic = refused(p, "E-annotation", "'x'")
    assert "Buffer" in diagnostic.fix


def test_string_constant_in_kernel_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = "one"  # E-string
    refused(p, "E-string", "'one'")


def test_global_and_import_in_kernel_are_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            import math  # E-import
    refused(p, "E-import", "imports")


def test_task_mixing_kernel_code_and_nodes_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        with task(outs=(x,), name="outer"):
            x[0] = 1.0  # E-mixed
            with task(outs=(x,)):
                x[0] = 2.0
    refused(p, "E-mixed", "outer", "kernel code")


def test_writing_a_read_only_buffer_inside_a_task_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        with task(ins=(x,), outs=(y,)):
            for i in parallel_loop(N, outs=(x,)):  # E-taskro
                x[i] = 0.0
    refused(p, "E-taskro", "'x'", "read-only")


def test_kernel_called_from_python_is_refused():
    @hl.kernel
    def k(x: Buffer[f32, "N"]):
        i = instance_id(0)
        x[i] = 1.0
    with pytest.raises(FrontendError, match="cannot be called from Python"):
        k(1)


def test_marker_called_from_python_is_refused():
    with pytest.raises(FrontendError, match="kernel language"):
        parallel_loop(3)
