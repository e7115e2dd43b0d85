"""written_forms_bench: every written form of a product and of a
convolution, a stencil, a reduction, a loop order, a time step and a
PolyBench kernel on the cpu target,
each output checked against the library call that computes it."""
import pytest

from benchmarks import (
    convolutions, loop_orders, polybench, products, reductions, stencils, time_steps,
)
from benchmarks.written_forms_bench import main


def test_every_form_runs_and_agrees_with_its_peer(capsys):
    pytest.importorskip("torch")
    pytest.importorskip("hpvm_cpu")
    # sizes no tile or block divides; conv1d's length is the images' pixel count
    assert main(["--size", "23", "--conv-shape", "3,5,11,3", "--grid", "19", "--repeat",
                 "1", "--warm-up", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    forms = [line.split(" | ")[0].lstrip("| ") for line in lines[4:]]
    programs = {**products.TILED, **convolutions.TILED, **stencils.FORMS, **reductions.FORMS}
    # a form updating an array in place has a second row with it given up (hpvm.donate)
    assert forms == [row for name, program in programs.items() for row in (
        (name, f"{name}, donated") if any(p.direction == "inout"
                                          for p in program.build().root_graph.params)
        else (name,))] + [f"{name} ({how})" for forms in (loop_orders, time_steps)
                          for how in ("as written", "pipeline default") for name in forms.FORMS]\
        + [f"{name} ({how})" for how in ("as written", "pipeline default")
           for name in polybench.FORMS]
    assert "interior, donated" in forms
