"""OpenCL platforms and devices: discovery, choice by option, and one
context and in-order queue per device, shared by every executable.

Options: ``platform`` and ``device``, each an index (``0``) or a
case-insensitive part of the name (``"nvidia"``, ``"pocl"``).  Without
them the first GPU is chosen, else the first device of any kind.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

from hpvm.errors import TargetError


@dataclass(frozen=True)
class DeviceInfo:
    """What the code generator and the launcher need to know of a device."""

    platform: str
    name: str
    kind: str
    version: str
    driver: str
    extensions: frozenset[str]
    max_work_group_size: int
    local_memory: int

    @property
    def fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    @property
    def atomics64(self) -> bool:
        return {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= self.extensions

    @property
    def key(self) -> str:
        """Identifies the compiler: part of the program cache key."""
        return f"{self.platform}|{self.name}|{self.version}|{self.driver}"

    def describe(self) -> str:
        return f"{self.name} ({self.kind}, {self.platform}, {self.version})"


def device_info(device) -> DeviceInfo:
    import pyopencl as cl
    return DeviceInfo(
        platform=device.platform.name.strip(), name=device.name.strip(),
        kind=cl.device_type.to_string(device.type), version=device.version.strip(),
        driver=device.driver_version.strip(), extensions=frozenset(device.extensions.split()),
        max_work_group_size=int(device.max_work_group_size),
        local_memory=int(device.local_mem_size))


@lru_cache(maxsize=1)
def all_devices() -> tuple:
    """Every OpenCL device as ``(platform_index, device_index, device)``;
    empty when pyopencl or every platform is missing."""
    try:
        import pyopencl as cl
        platforms = cl.get_platforms()
    except Exception:  # no ICD loader, no platform: no devices
        return ()
    found = []
    for p, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except Exception:  # a broken platform must not hide the others
            continue
        found.extend((p, d, device) for d, device in enumerate(devices))
    return tuple(found)


def describe_devices() -> str:
    """One line per device: ``[platform.device] name (kind, platform)``."""
    return "; ".join(f"[{p}.{d}] {device_info(device).describe()}"
                     for p, d, device in all_devices())


def _matches(selector, index: int, name: str) -> bool:
    if selector is None:
        return True
    if isinstance(selector, int) or str(selector).isdigit():
        return int(selector) == index
    return str(selector).lower() in name.lower()


def select_device(options: dict):
    """The pyopencl device the options name (see the module docstring)."""
    import pyopencl as cl
    platform, wanted = options.get("platform"), options.get("device")
    candidates = [device for p, d, device in all_devices()
                  if _matches(platform, p, device.platform.name)
                  and _matches(wanted, d, device.name)]
    if not candidates:
        listing = describe_devices() or "none"
        raise TargetError(f"gpu_opencl: no OpenCL device matches platform={platform!r} "
                          f"device={wanted!r}; devices found: {listing}")
    gpus = [d for d in candidates if d.type & cl.device_type.GPU]
    return (gpus or candidates)[0]


@dataclass
class DeviceRuntime:
    """A device's context and in-order queue (kernels run in launch order,
    so a consumer never starts before its producer finished)."""

    device: object
    context: object
    queue: object
    info: DeviceInfo
    lock: threading.Lock


_RUNTIMES: dict[int, DeviceRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(device) -> DeviceRuntime:
    """The shared context and queue of ``device`` (made on first use)."""
    import pyopencl as cl
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(device.int_ptr)
        if runtime is None:
            context = cl.Context([device])
            runtime = DeviceRuntime(device, context, cl.CommandQueue(context, device),
                                    device_info(device), threading.Lock())
            _RUNTIMES[device.int_ptr] = runtime
        return runtime
