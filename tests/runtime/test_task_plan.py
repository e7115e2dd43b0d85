import importlib.util
from pathlib import Path

from hpvm.runtime.flatten import Source, flatten
from hpvm.runtime.task_plan import READ, plan_program

_spec = importlib.util.spec_from_file_location("runtime_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)


def _plan(module):
    program = flatten(module)
    placement = {str(t.ref): "cpu" for t in program.tasks}
    return plan_program(module, program, placement)


def test_a_plan_sorts_each_task_s_ports_by_role():
    plan = _plan(programs.parallel_pair("cpu"))
    for task in plan.tasks:
        assert task.arguments == (("x", Source(None, "a"), READ),)
        assert [(o.param.name, o.allocated) for o in task.outputs] == [("y", True)]
        assert task.buffer_sources == (Source(None, "a"),)


def test_a_plan_counts_the_readers_of_every_output():
    plan = _plan(programs.parallel_pair("cpu"))
    for task in plan.tasks:
        for output in task.outputs:
            assert output.consumers == plan.counts.get(Source(task.task.index, output.param.name), 0)
    assert plan.counts[Source(None, "a")] == 2
