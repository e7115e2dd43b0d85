"""Peers: other implementations of a benchmark, timed in the same run as hpvm.

Each peer is compared with the hpvm targets of the same kind of device
(``targets=``): numba and Halide with ``cpu``, hand-written OpenCL with
``gpu_opencl``; pass ``targets=("cpu", "gpu_opencl")`` to widen that
(``()`` means every target).

Three factories build a :class:`benchmarks.suite.Peer`; each peer's
``available()`` returns None when it can run here, else the reason (a missing
package, no OpenCL device), and ``prepare(inputs)`` does the untimed set-up
and returns the timed ``run() -> outputs`` (outputs by root-graph parameter
name, like ``exe(**inputs)``).

numba: a function of the inputs dict returning the outputs dict; its inner
kernels are ``@numba.njit(parallel=True)``.  prepare() calls it once so the
JIT compile is not timed::

    @numba.njit(parallel=True)
    def _blur(img): ...
    PEER = numba_peer(lambda inputs: {"out": _blur(inputs["img"])})

Halide (PyPI ``halide``): ``build(hl, inputs)`` defines and schedules the
pipeline (untimed; ``hl`` is the imported module) and returns ``run() ->
outputs``.  ``hl.Buffer(array)`` wraps a numpy array without copying and
reverses its axes (numpy's last axis is Halide's x)::

    def build(hl, inputs):
        img = hl.Buffer(inputs["img"]); x, y = hl.Var("x"), hl.Var("y")
        f = hl.Func("f"); f[x, y] = img[x, y] * 2
        f.compile_jit()
        def run():
            out = np.empty_like(inputs["img"]); f.realize(hl.Buffer(out))
            return {"out": out}
        return run
    PEER = halide_peer(build)

Hand-written OpenCL C (pyopencl): ``setup(cl, inputs)`` declares the device
buffers through an :class:`OpenCLSession` and returns ``launch()``, which
enqueues the kernels::

    def setup(cl, inputs):
        img = cl.input("img")                      # copied in at every run
        out = cl.output("out", img.shape, img.dtype)  # read back at every run
        h, w = img.shape
        return lambda: cl.launch("scale", (w, h), None, img, out, np.int32(w))
    PEER = opencl_peer(SOURCE, setup)

The timed run copies every ``cl.input`` from the host, calls launch(),
reads every ``cl.output`` back and waits: host<->device copies are timed,
the same way the hpvm row's ``exe(**inputs)`` times them.  Building the
program and allocating buffers happen in prepare(), untimed.  The device is
the one the gpu_opencl target picks by default (same context and queue)
when hpvm_opencl is importable, else the first GPU, else any device.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Callable

import numpy as np

from .suite import Inputs, Outputs, Peer

CPU = ("cpu",)
GPU = ("gpu_opencl",)


def _missing(module: str) -> str | None:
    """None when ``module`` imports, else why not."""
    try:
        importlib.import_module(module)
    except Exception as error:  # ImportError, or a broken native library
        return f"cannot import {module}: {error}; install the 'bench' extra: pip install -e '.[bench]'"
    return None


# ----------------------------------------------------------------- numba
def stand_in_for_missing_numba() -> None:
    """Where numba is not installed (the GPU machine takes no pip installs),
    put a stand-in in sys.modules so program modules that ``import numba``
    at their top still import: ``@numba.njit`` functions then raise when
    called and every numba peer reports numba as unavailable.  The runner
    calls this before it loads the programs."""
    if _missing("numba") is None:
        return
    stand_in = types.ModuleType("numba", "stand-in: numba is not installed")
    stand_in.__hpvm_stand_in__ = True
    stand_in.prange = range

    def njit(*args, **options):
        def wrap(function):
            def unavailable(*_, **__):
                raise RuntimeError(f"{function.__name__} needs numba, which is not installed")
            return unavailable
        return wrap(args[0]) if args and callable(args[0]) else wrap
    stand_in.njit = stand_in.jit = njit
    sys.modules["numba"] = stand_in


def _numba_unavailable() -> str | None:
    if getattr(sys.modules.get("numba"), "__hpvm_stand_in__", False):
        return "numba is not installed; install the 'bench' extra: pip install -e '.[bench]'"
    return _missing("numba")


def numpy_peer(reference: Callable[[Inputs], Outputs], targets: tuple[str, ...] = CPU) -> Peer:
    """The benchmark's own numpy reference, timed as a peer."""
    return Peer(name="numpy", prepare=lambda inputs: lambda: reference(inputs), targets=targets)


def numba_peer(function: Callable[[Inputs], Outputs], name: str = "numba",
               targets: tuple[str, ...] = CPU) -> Peer:
    """A peer calling ``function(inputs) -> outputs`` (numba kernels inside)."""
    def prepare(inputs: Inputs) -> Callable[[], Outputs]:
        function(inputs)  # JIT compile, untimed
        return lambda: function(inputs)
    return Peer(name=name, prepare=prepare, available=_numba_unavailable, targets=targets)


# ---------------------------------------------------------------- Halide
def halide_peer(build: Callable[[Any, Inputs], Callable[[], Outputs]],
                name: str = "halide", targets: tuple[str, ...] = CPU) -> Peer:
    """A peer whose ``build(hl, inputs)`` returns the timed ``run()``."""
    def prepare(inputs: Inputs) -> Callable[[], Outputs]:
        import halide
        return build(halide, inputs)
    return Peer(name=name, prepare=prepare, available=lambda: _missing("halide"), targets=targets)


# ---------------------------------------------------------------- OpenCL
def _opencl_device():
    """The device hpvm's gpu_opencl target uses by default, else the first
    GPU, else the first device; raises when there is none."""
    try:
        from hpvm_opencl.devices import runtime_for, select_device
    except ImportError:
        runtime_for = None
    if runtime_for is not None:
        runtime = runtime_for(select_device({}))
        return runtime.context, runtime.queue
    import pyopencl as cl
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise RuntimeError("no OpenCL device")
    device = ([d for d in devices if d.type & cl.device_type.GPU] or devices)[0]
    context = cl.Context([device])
    return context, cl.CommandQueue(context, device)


def _opencl_unavailable() -> str | None:
    reason = _missing("pyopencl")
    if reason:
        return reason
    try:
        _opencl_device()
    except Exception as error:  # no ICD loader, no platform, no device
        return f"no OpenCL device: {error}"
    return None


class OpenCLSession:
    """What ``setup(cl, inputs)`` of an OpenCL peer works with: the built
    program, the context and queue, and the buffers it declares."""

    def __init__(self, source: str, inputs: Inputs):
        import pyopencl as cl
        import pyopencl.array as cl_array
        self._cl, self._array = cl, cl_array
        self.context, self.queue = _opencl_device()
        self.program = cl.Program(self.context, source).build()
        self._host_inputs = inputs
        self._inputs: list[tuple[str, Any]] = []
        self._outputs: list[tuple[str, Any]] = []
        self._kernels: dict[str, Any] = {}
        self.launched: list[Any] = []
        """The events of the last run's launches."""

    def input(self, name: str):
        """A device array copied from ``inputs[name]`` at every timed run."""
        host = np.ascontiguousarray(self._host_inputs[name])
        device = self._array.empty(self.queue, host.shape, host.dtype)
        self._inputs.append((name, device))
        return device

    def output(self, name: str, shape, dtype):
        """A device array read back as output ``name`` at every timed run."""
        device = self._array.zeros(self.queue, tuple(shape), np.dtype(dtype))
        self._outputs.append((name, device))
        return device

    def scratch(self, shape, dtype):
        """A device array for intermediate results (never copied)."""
        return self._array.zeros(self.queue, tuple(shape), np.dtype(dtype))

    def launch(self, kernel: str, global_size, local_size, *args) -> None:
        """Enqueue ``kernel``; device arrays may be passed as arguments."""
        if kernel not in self._kernels:
            self._kernels[kernel] = self._cl.Kernel(self.program, kernel)
        compiled = self._kernels[kernel]
        compiled.set_args(*(a.data if isinstance(a, self._array.Array) else a for a in args))
        self.launched.append(self._cl.enqueue_nd_range_kernel(
            self.queue, compiled, tuple(global_size),
            None if local_size is None else tuple(local_size)))

    def kernel_seconds(self) -> float | None:
        """The last run's kernels' own time, from profiling events (their
        queue finished); None where the queue does not profile."""
        launched = self.launched
        if not self.queue.properties & self._cl.command_queue_properties.PROFILING_ENABLE:
            return None
        info = self._cl.profiling_info
        return sum(e.get_profiling_info(info.END) - e.get_profiling_info(info.START)
                   for e in launched) * 1e-9

    def run(self, launch: Callable[[], None]) -> Outputs:
        """Copy inputs in, launch, read outputs back (the timed part)."""
        self.copy_inputs()
        self.launched = []
        launch()
        results = {name: device.get(queue=self.queue) for name, device in self._outputs}
        self.queue.finish()
        return results

    def copy_inputs(self) -> None:
        for name, device in self._inputs:
            device.set(np.ascontiguousarray(self._host_inputs[name]), queue=self.queue)


def opencl_peer(source: str, setup: Callable[[OpenCLSession, Inputs], Callable[[], None]],
                name: str = "opencl", targets: tuple[str, ...] = GPU) -> Peer:
    """A peer running hand-written OpenCL C ``source``; see the module
    docstring for ``setup``."""
    def prepare(inputs: Inputs) -> Callable[[], Outputs]:
        session = OpenCLSession(source, inputs)
        launch = setup(session, inputs)
        return lambda: session.run(launch)

    def prepare_kernels(inputs: Inputs) -> Callable[[], None]:
        session = OpenCLSession(source, inputs)
        launch = setup(session, inputs)
        session.copy_inputs()

        def kernels() -> None:
            session.launched = []
            launch()
            session.queue.finish()
        kernels.kernel_seconds = session.kernel_seconds  # the last run's, from profiling
        return kernels
    return Peer(name=name, prepare=prepare, available=_opencl_unavailable, targets=targets,
                prepare_kernels=prepare_kernels)
