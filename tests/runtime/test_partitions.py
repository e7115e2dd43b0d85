"""A target that asks for partitions (Target.partitions) gets each group
of nodes outlined and launches it once; the placement report, run reports
and saved executables say so, and a bad group is the target's error."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import HpvmError
from hpvm.passes.outline import convex_groups
from hpvm.registry import Registry
from hpvm.runtime import Executable, compile
from hpvm.runtime.loopback import LoopbackPlugin, LoopbackTarget
from hpvm.target import NodeRef

_spec = importlib.util.spec_from_file_location("runtime_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)

A = np.random.default_rng(0).standard_normal(32).astype(np.float32)


class GroupingTarget(LoopbackTarget):
    """Loopback, running its nodes of each graph as convex groups."""

    def __init__(self, groups=None):
        super().__init__("grouping")
        self.groups = groups

    def partitions(self, module, nodes, options):
        if self.groups is not None:
            return [[NodeRef("main", n) for n in group] for group in self.groups]
        names = {ref.node for ref in nodes}
        return [[NodeRef("main", n) for n in group]
                for group in convex_groups(module.graph("main"), names)]


def registry_with(target):
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(target), name="grouping-plugin")
    return registry


def test_consecutive_nodes_run_as_one_launch():
    target = GroupingTarget()
    exe = compile(programs.chain(hints=("grouping", "grouping", None)), targets=["grouping"],
                  registry=registry_with(target))
    np.testing.assert_allclose(exe(a=A)["b"], (A * 2 + 1) * 3, rtol=1e-6)
    [partition] = exe.placement.partitions
    assert exe.placement.partitions[partition] == ["@main.s", "@main.t"]
    assert target.devices[-1].launches == [NodeRef("main", partition.split(".")[1])]
    assert exe.placement.targets["@main.s"] == "grouping"  # the program as written
    assert f"partition {partition} on grouping, one launch: s, t" in exe.placement.format()
    assert {r.node for r in exe.report().records} == {partition.split(".")[1], "u"}


def test_groups_split_by_another_device_stay_apart():
    target = GroupingTarget()
    exe = compile(programs.chain(hints=("grouping", None, "grouping")), targets=["grouping"],
                  registry=registry_with(target))
    np.testing.assert_allclose(exe(a=A)["b"], (A * 2 + 1) * 3, rtol=1e-6)
    assert exe.placement.partitions == {}  # two groups of one node: launched as they are
    assert len(target.devices[-1].launches) == 2


def test_a_saved_executable_keeps_its_partitions(tmp_path):
    target = GroupingTarget()
    registry = registry_with(target)
    exe = compile(programs.chain(hints=("grouping",) * 3), targets=["grouping"], registry=registry)
    exe.save(tmp_path / "chain.hpvmx")
    loaded = Executable.load(tmp_path / "chain.hpvmx", registry=registry)
    assert loaded.placement.partitions == exe.placement.partitions
    np.testing.assert_allclose(loaded(a=A)["b"], (A * 2 + 1) * 3, rtol=1e-6)
    assert len(target.devices[-1].launches) == 1


def test_a_group_that_cannot_be_one_node_is_the_targets_bug():
    target = GroupingTarget(groups=[["s", "u"]])
    with pytest.raises(HpvmError, match=r"target 'grouping' asked to run .* as one launch.*"
                                        r"depend on itself.*bug of the target plugin"):
        compile(programs.chain(hints=("grouping",) * 3), targets=["grouping"],
                registry=registry_with(target))


class ChoosyTarget(LoopbackTarget):
    """Claims nothing, says why, and sees the options it is compiled with."""

    def __init__(self, mood="busy"):
        super().__init__("choosy")
        self.mood = mood

    def options(self):
        from hpvm.options import Option
        return [Option("mood", str, "busy", "why nothing is claimed")]

    def configured(self, options):
        return ChoosyTarget(options.get("mood", "busy"))

    def declines(self, module, graph, node):
        return f"too {self.mood} for '{node.name}'"


def test_a_fallback_says_why_each_listed_target_declined():
    registry = Registry(entry_points=[])
    registry.register(LoopbackPlugin(ChoosyTarget()), name="choosy-plugin")
    exe = compile(programs.chain(), targets=["choosy"], options={"mood": "sleepy"},
                  registry=registry)
    assert exe.placement.reasons["@main.t"] == (
        "fallback: no listed target claims it (choosy: too sleepy for 't')")
