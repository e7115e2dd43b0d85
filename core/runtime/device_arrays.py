"""Arrays that live on a device: inputs taken where they are, outputs left
where they were made.

**In.**  An input that is not a numpy array is offered to every device of
the executable that has memory of its own (``Device.adopt``): a CUDA
tensor (PyTorch, CuPy, JAX: anything with ``__dlpack__``) on aten's CUDA
device, a ``pyopencl.array.Array`` of gpu_opencl's context.  The device
that takes it holds the run's copy of the input, over the caller's memory:
no copy, and the runtime never writes or frees it (a node updating it in
place works on a copy).  An array on a device where no node of the
executable runs is copied to the host once, through DLPack, and the run's
report counts the bytes (``<inputs>``).  Arrays in host memory are taken
as numpy arrays over the same memory (inputs.host_array).

**Out.**  ``exe(..., outputs="device")`` leaves every output on the device
that made it, as that device's own array type (``Device.export``): a torch
tensor from aten on CUDA, a ``pyopencl.array.Array`` from gpu_opencl.
Outputs made in host memory are numpy arrays, as by default; a device with
no array type of its own has its outputs copied to the host (counted in
the report).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Diagnostic, HpvmError, Location
from ..target import ArrayRefused, Device
from .memory import ALWAYS, CopyStats, Value

HOST_OUTPUTS, DEVICE_OUTPUTS = "host", "device"
OUTPUT_PLACES = (HOST_OUTPUTS, DEVICE_OUTPUTS)
"""Where a run's outputs go: numpy arrays on the host (the default), or
each left on the device that made it."""

DLPACK_CPU = 1
"""The DLPack device type (DLDeviceType) of host memory, which numpy reads."""
DLPACK_DEVICES = {2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                  9: "VPI", 10: "ROCm", 11: "ROCm host", 12: "an external device",
                  13: "CUDA managed", 14: "oneAPI", 15: "WebGPU", 16: "Hexagon"}
HOST_COPY_FIX = "copy it to the host first (torch: tensor.cpu(); CuPy: cupy.asnumpy(x))"


def output_place(outputs: Any) -> str:
    """``outputs`` (a run's ``outputs=`` argument) checked."""
    if outputs not in OUTPUT_PLACES:
        raise HpvmError(f"outputs={outputs!r} is not one of {', '.join(map(repr, OUTPUT_PLACES))} "
                        "(fix: outputs='device' leaves the outputs on the devices that made "
                        "them; leave it out for numpy arrays)")
    return outputs


def device_array(devices: dict[str, Device], array, target: str | None = None):
    """``array`` copied to the device of ``target`` among ``devices`` (by
    default the one with memory of its own), as that device's array type
    (Executable.device_array)."""
    own = sorted(name for name, device in devices.items() if not device.host_memory)
    if not own:
        raise HpvmError("device_array: every target of this executable works in host memory; "
                        "fix: pass numpy arrays as they are")
    if target is None and len(own) > 1:
        raise HpvmError(f"device_array: this executable has {len(own)} targets with memory of "
                        f"their own ({', '.join(own)}); fix: name one with target=...")
    target = target if target is not None else own[0]
    if target not in own:
        raise HpvmError(f"device_array: '{target}' is not a target of this executable with "
                        f"memory of its own; fix: name one of {own}")
    device = devices[target]
    host = np.ascontiguousarray(array)
    handle = device.empty(host.shape, host.dtype)
    device.copy_in(handle, host)
    exported = device.export(handle)
    if exported is None:
        device.free(handle)
        raise HpvmError(f"device_array: target '{target}' has no array type of its own; fix: "
                        "pass numpy arrays, or stage them with exe.stage(...)")
    return exported


def dlpack_device(value: Any) -> tuple[int, int] | None:
    """The DLPack (device type, index) of ``value``, or None when it says
    none."""
    if not hasattr(value, "__dlpack_device__"):
        return None
    kind, index = value.__dlpack_device__()
    return int(kind), int(index)


def device_name(kind: int) -> str:
    return DLPACK_DEVICES.get(kind, f"DLPack device type {kind}")


class DeviceArrays:
    """Takes a run's inputs that live on devices (see the module
    docstring) for the devices of one executable."""

    def __init__(self, devices: dict[str, Device]):
        self.devices = {name: d for name, d in devices.items() if not d.host_memory}

    def adopted(self, value: Any) -> Value | None:
        """``value`` as a Value held by the device that takes it over its
        memory; None where no device does (take says why, or copies)."""
        return self._offer(value)[0]

    def _offer(self, value: Any) -> tuple[Value | None, ArrayRefused | None]:
        """(the Value of the device that takes ``value``, or None; the first
        refusal of a device of its kind, where none takes it)."""
        refusal = None
        for name, device in self.devices.items():
            try:
                adopted = device.adopt(value)
            except ArrayRefused as why:
                refusal = refusal or why
                continue
            if adopted is not None:
                handle, shape, dtype = adopted
                return Value(tuple(shape), np.dtype(dtype), {name: handle}, consumers=ALWAYS,
                             pinned=True), None
        return None, refusal

    def take(self, value: Any, where: Location, copied: CopyStats) -> Value | np.ndarray | \
            Diagnostic | None:
        """The input ``value`` at ``where``: a Value held by the device that
        adopted it, a host array copied from a device where no node runs
        (its bytes added to ``copied``), a Diagnostic saying why it cannot
        be taken; None when it is no device array (host arrays, scalars)."""
        if isinstance(value, (np.ndarray, Value, bool, int, float, np.generic)):
            return None
        adopted, refusal = self._offer(value)
        if adopted is not None:
            return adopted
        if refusal is not None:  # no device took it, and one of its kind says why not
            return Diagnostic(where, refusal.problem, refusal.fix)
        try:
            place = dlpack_device(value)
        except (TypeError, ValueError, RuntimeError, BufferError):
            return None  # host_array says why it cannot be read
        if place is None or place[0] == DLPACK_CPU:
            return None
        return _copied_to_host(value, place, where, copied)


def _copied_to_host(value: Any, place: tuple[int, int], where: Location,
                    copied: CopyStats) -> np.ndarray | Diagnostic:
    """``value``, on the DLPack device ``place``, copied to the host
    through DLPack (the producer copies: DLPack 1.0's ``dl_device``)."""
    try:
        array = np.from_dlpack(value, device="cpu", copy=True)
    except (TypeError, ValueError, BufferError, RuntimeError, NotImplementedError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else \
            type(error).__name__
        return Diagnostic(where, f"got an array on a {device_name(place[0])} device "
                          f"({place[0]}:{place[1]}), where no node of this executable runs, "
                          f"and its library cannot copy it to the host through DLPack ({reason})",
                          HOST_COPY_FIX)
    copied.to_host += array.nbytes
    return array
