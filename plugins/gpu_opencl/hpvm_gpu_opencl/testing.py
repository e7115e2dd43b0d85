"""Running single kernels on an OpenCL device, for tests: many kernel
functions share one program (one OpenCL build), each run like
``hpvm.interp.run_kernel``.

    program = KernelProgram(module_of(f, g), {"f": 1, "g": 2})
    buffers = program.run("f", {"x": x, "out": np.zeros_like(x)}, (len(x),))
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from hpvm.errors import Location
from hpvm.ir.graph import Module
from hpvm.ir.kernel import Expr, InstanceId, KernelFunction, Load, Store
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import BufferType, ScalarType

from hpvm_opencl.device import NodePlan, OpenCLDevice
from hpvm_opencl.devices import runtime_for, select_device
from hpvm_opencl.layout import entry_arguments, synchronizes
from hpvm_opencl.launch_tests import launch_flags
from hpvm_opencl.program import build_options, build_program
from hpvm_opencl.renderer import OpenCLRenderer


def module_of(*functions: KernelFunction) -> Module:
    """A module holding ``functions`` and no graphs."""
    return Module("kernels", {f.name: f for f in functions}, {}, "main")


def map_function(name: str, inputs: Mapping[str, ScalarType], out: ScalarType,
                 compute: Callable[..., Expr]) -> KernelFunction:
    """``out[i] = compute(in1[i], ...)`` over buffers of length N."""
    return maps_function(name, inputs, {"out": (out, compute)})


def maps_function(name: str, inputs: Mapping[str, ScalarType],
                  outputs: Mapping[str, tuple[ScalarType, Callable[..., Expr]]]) -> KernelFunction:
    """Several maps in one kernel (one OpenCL kernel to build instead of
    many): ``out[i] = compute(**inputs at i)`` for each output
    ``out: (type, compute)``; ``compute`` takes the inputs it names."""
    import inspect
    i = InstanceId(0)
    params = tuple(Parameter(n, BufferType(t, ("N",))) for n, t in inputs.items())
    params += tuple(Parameter(n, BufferType(t, ("N",)), "out") for n, (t, _) in outputs.items())
    loads = {n: Load(n, (i,), t) for n, t in inputs.items()}
    body = []
    for out, (_, compute) in outputs.items():
        wanted = inspect.signature(compute).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in wanted.values())
        args = loads if takes_all else {n: loads[n] for n in wanted if n in loads}
        body.append(Store(out, (i,), compute(**args)))
    return KernelFunction(name, params, tuple(body))


class KernelProgram:
    """The functions named in ``ranks`` (function: replication rank)
    compiled as one OpenCL program on the device ``options`` select."""

    def __init__(self, module: Module, ranks: Mapping[str, int], options: dict | None = None):
        options = dict(options or {})
        renderer = OpenCLRenderer(module)
        self.plans, arguments = {}, {}
        for function, rank in ranks.items():
            entry = renderer.add_entry(function, rank)
            arguments[entry] = entry_arguments(module.function(function), rank)
            self.plans[function] = NodePlan("kernel", function, entry, rank,
                                            synchronizes(module, function),
                                            **renderer.work_item_shape(entry))
        self.source = renderer.finish()
        runtime = runtime_for(select_device(options))
        def build(wide: bool = False, true_tests: tuple[str, ...] = ()):
            return build_program(runtime, self.source.text,
                                 build_options(options, wide) + launch_flags(module, true_tests),
                                 lambda n: self.source.origin_of(n).describe())

        self.device = OpenCLDevice(runtime, build(), module, {}, arguments, options,
                                   build_variant=build)
        self.module = module

    def run(self, function: str, args: Mapping[str, Any], replication: tuple[int, ...],
            group: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
        """Run ``function``; returns every buffer argument after the run."""
        handles = {}
        for name, value in args.items():
            if isinstance(value, np.ndarray):
                handles[name] = self.device.allocate(value.shape, value.dtype)
                self.device.copy_in(handles[name], value)
            else:
                handles[name] = value
        where = Location(function=function)
        self.device.wait(self.device.enqueue(self.plans[function], handles, tuple(replication),
                                             group, where))
        return {name: self.device.copy_out(handle) for name, handle in handles.items()
                if isinstance(args[name], np.ndarray)}
