"""The target under test, as the battery sees it.

The pytest plugin builds one :class:`TargetUnderTest` per session (fixture
``hpvm_target``).  It owns a registry of the installed plugins plus a second
device, ``sdk_loopback`` (:class:`hpvm.runtime.loopback.LoopbackTarget`), that
claims only nodes hinted with its name; it compiles programs for the target
and compares what they compute with the reference interpreter::

    def test_something(hpvm_target):
        exe = hpvm_target.compile(module)          # targets=[NAME]
        hpvm_target.require_nodes(exe)             # skip if it claimed none
        hpvm_target.assert_close(exe(**inputs), run_module(module, inputs))
"""
from __future__ import annotations

import numpy as np
import pytest

from . import graphs
from .graphs import UNARY_TENSOR_OPS

LOOPBACK = "sdk_loopback"
"""Name of the second device the battery registers."""


class TargetUnderTest:
    """One installed target, its registry, and checking helpers.

    ``tolerance_scale`` multiplies every float tolerance (option
    ``--hpvm-tolerance``) for targets that compute in lower precision."""

    def __init__(self, name: str, tolerance_scale: float = 1.0, registry=None):
        from hpvm.runtime.loopback import LoopbackPlugin, LoopbackTarget
        from hpvm.registry import Registry
        self.name = name
        self.tolerance_scale = tolerance_scale
        self.registry = registry or Registry()
        self.registry.target(name)  # TargetError naming the installed targets
        self.loopback = LoopbackTarget(LOOPBACK)
        self.registry.register(LoopbackPlugin(self.loopback), name="hpvm-sdk-loopback",
                               distribution="hpvm-sdk")
        # Registering collects the targets again: look the target up afresh.
        self.info = self.registry.target(name)

    @property
    def target(self):
        """The :class:`hpvm.target.Target` object under test."""
        return self.info.target

    @property
    def availability(self):
        return self.info.availability

    def describe(self) -> str:
        """One line: name, distribution, version, availability."""
        info = self.info
        state = "available" if info.availability.available else "NOT available"
        reason = f" ({info.availability.reason})" if info.availability.reason else ""
        version = f" {info.version}" if info.version else ""
        return f"target '{info.name}' from {info.distribution}{version}: {state}{reason}"

    # -- compiling ---------------------------------------------------------
    def compile(self, module, targets=None, options=None):
        """``hpvm.runtime.compile`` in this registry; ``targets`` defaults
        to the target under test alone (the rest falls back to cpu/interp)."""
        from hpvm.runtime import compile
        return compile(module, targets=list(targets or [self.name]), options=options,
                       registry=self.registry)

    def nodes_on_target(self, exe) -> list[str]:
        """Keys (``@graph.node``) of the nodes ``exe`` placed on the target."""
        return [key for key, target in exe.placement.targets.items() if target == self.name]

    def require_nodes(self, exe) -> list[str]:
        """The nodes placed on the target; skips the test when there are none
        (the target's matcher claims nothing of the program)."""
        nodes = self.nodes_on_target(exe)
        if not nodes:
            pytest.skip("the target claims no node of this program")
        return nodes

    # -- the small graphs of graphs.py, made of nodes the target claims ------
    @property
    def stage(self) -> str | None:
        """What the battery's small graphs are made of for this target: None
        (kernel nodes) when it claims them, else the first unary tensor op
        it claims; skips the test when it claims neither."""
        for stage in (None,) + UNARY_TENSOR_OPS:
            module = graphs.chain((self.name,) * 3, stage)
            graph = module.root_graph
            if all(self.target.claims(module, graph, node) for node in graph.nodes):
                return stage
        pytest.skip(f"target '{self.name}' claims neither plain kernel nodes nor any of the "
                    f"tensor ops {', '.join(UNARY_TENSOR_OPS)}")

    def require_kernels(self) -> None:
        """Skip unless the target claims plain kernel nodes."""
        if self.stage is not None:
            pytest.skip(f"target '{self.name}' claims no plain kernel node")

    def chain(self, hints):
        """:func:`graphs.chain` of nodes this target claims."""
        return graphs.chain(hints, self.stage)

    def pair(self):
        """:func:`graphs.independent_pair` on this target."""
        return graphs.independent_pair(self.name, self.stage)

    def require_placed(self, exe, *nodes: str) -> None:
        """Assert every ``@main.NODE`` of ``nodes`` landed where its hint said."""
        wrong = [f"{n} on {exe.placement.targets[f'@main.{n}']}" for n in nodes
                 if exe.placement.targets[f"@main.{n}"] not in (self.name, LOOPBACK)]
        assert not wrong, (f"nodes hinted '{self.name}' that it claims were placed elsewhere: "
                           f"{', '.join(wrong)}")

    def device(self):
        """A fresh Device of the target, loaded from an artifact for a small
        chain placed on it."""
        exe = self.compile(self.chain((self.name,) * 3))
        self.require_nodes(exe)
        return self.target.load(exe.artifacts[self.name], {})

    # -- comparing ---------------------------------------------------------
    def check_program(self, program) -> None:
        """Compile a :class:`~hpvm_sdk.conformance.programs.ConformanceProgram`
        for the target, run it (frame by frame if it streams) and compare
        every output with the interpreter's."""
        module = program.load()
        exe = self.compile(module)
        self.require_nodes(exe)
        inputs = program.inputs(seed=0)
        try:
            if module.root_graph.is_streaming:
                self._check_stream(exe, program, inputs)
            else:
                from hpvm.interp import run_module
                self.assert_close(exe(**inputs), run_module(module, inputs),
                                  program.rtol, program.atol, program.name)
        finally:
            exe.close()

    def _check_stream(self, exe, program, inputs: dict) -> None:
        from hpvm.interp import Interpreter
        from hpvm.testing import run_streaming
        module = program.load()
        streamed = program.streamed_params()
        fixed = {k: v for k, v in inputs.items() if k not in streamed}
        frames = [{k: (np.asarray(v) + i).astype(np.asarray(v).dtype)
                   for k, v in inputs.items() if k in streamed} for i in range(program.frames)]
        results = run_streaming(exe, module, fixed, frames)
        reference = Interpreter(module)
        reference.start(**fixed)
        for index, (frame, result) in enumerate(zip(frames, results)):
            reference.push(**frame)
            self.assert_close(result, reference.pop(), program.rtol, program.atol,
                              f"{program.name} frame {index}")
        reference.close()

    def assert_close(self, actual: dict, expected: dict, rtol: float = 1e-4,
                     atol: float = 1e-5, label: str = "") -> None:
        """Outputs equal to the interpreter's: same names, shapes, dtypes;
        values within the tolerances (scaled by ``tolerance_scale``)."""
        from hpvm.testing import assert_outputs_close
        scale = self.tolerance_scale
        assert_outputs_close({k: np.asarray(v) for k, v in actual.items()}, expected,
                             rtol=rtol * scale, atol=atol * scale, label=label or self.name)
