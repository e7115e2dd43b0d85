"""OpenCL platforms and devices: discovery, choice by option, and one
context and in-order queue per device, shared by every executable.

Options: ``platform`` and ``device``, each an index (``0``) or a
case-insensitive part of the name (``"nvidia"``, ``"pocl"``).  Without
them the first GPU is chosen, else the first device of any kind.  A device
whose OpenCL C compiler cannot build a trivial kernel is never chosen: PoCL
3.0's LLVM 14, for one, does not know CPUs newer than itself (AMD Zen 5)
and rejects every program with "unknown target CPU 'generic'".
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
    compute_units: int = 1

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
        local_memory=int(device.local_mem_size), compute_units=int(device.max_compute_units))


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


PROBE_SOURCE = "__kernel void hpvm_probe(__global int* out) { out[get_global_id(0)] = 1; }"
_COMPILER_PROBLEMS: dict[int, str | None] = {}


def compiler_problem(device) -> str | None:
    """None when ``device``'s OpenCL C compiler builds a trivial kernel;
    else the first line of what it said (asked once per process)."""
    key = device.int_ptr
    if key not in _COMPILER_PROBLEMS:
        import pyopencl as cl
        try:
            cl.Program(runtime_for(device).context, PROBE_SOURCE).build()
            _COMPILER_PROBLEMS[key] = None
        except Exception as error:  # cl.Error, or a driver that fails otherwise
            lines = [line.strip() for line in str(error).splitlines()]
            said = [line for line in lines if line.startswith("error:")] or lines or ["no message"]
            _COMPILER_PROBLEMS[key] = said[0]
    return _COMPILER_PROBLEMS[key]


def describe_devices() -> str:
    """One line per device: ``[platform.device] name (kind, platform)``,
    and why it is not used where its compiler fails."""
    lines = []
    for p, d, device in all_devices():
        problem = compiler_problem(device)
        unusable = f" [unusable: its OpenCL C compiler fails: {problem}]" if problem else ""
        lines.append(f"[{p}.{d}] {device_info(device).describe()}{unusable}")
    return "; ".join(lines)


def usable_devices() -> list:
    """The devices whose compiler works, as ``all_devices`` lists them."""
    return [entry for entry in all_devices() if compiler_problem(entry[2]) is None]


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
    candidates = [device for p, d, device in usable_devices()
                  if _matches(platform, p, device.platform.name)
                  and _matches(wanted, d, device.name)]
    if not candidates:
        listing = describe_devices() or "none"
        raise TargetError(f"gpu_opencl: no OpenCL device matches platform={platform!r} "
                          f"device={wanted!r}; devices found: {listing}")
    gpus = [d for d in candidates if d.type & cl.device_type.GPU]
    return (gpus or candidates)[0]


POOL_HELD_BYTES = 1 << 30
"""The most memory a device's pool keeps for reuse once its buffers are
freed; past it, the pool gives what it holds back to the driver."""


@dataclass
class DeviceRuntime:
    """A device's context and in-order queue (kernels run in launch order,
    so a consumer never starts before its producer finished), and its
    memory pool: buffers freed by one run (or dropped by the caller, for
    the arrays ``outputs="device"`` hands out) are taken again by the next
    instead of allocated from the driver, which maps new memory on first
    use (a 256 MiB output cost 0.5 ms per call on an H200)."""

    device: object
    context: object
    queue: object
    info: DeviceInfo
    lock: threading.Lock
    pool: object = None

    def trim_pool(self) -> None:
        """Give the pool's held memory back past POOL_HELD_BYTES."""
        pool = self.pool
        if pool.managed_bytes - pool.active_bytes > POOL_HELD_BYTES:
            pool.free_held()


_RUNTIMES: dict[int, DeviceRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(device) -> DeviceRuntime:
    """The shared context and queue of ``device`` (made on first use)."""
    import pyopencl as cl
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(device.int_ptr)
        if runtime is None:
            import pyopencl.tools as cl_tools
            context = cl.Context([device])
            queue = cl.CommandQueue(context, device, cl.command_queue_properties.PROFILING_ENABLE)
            runtime = DeviceRuntime(device, context, queue, device_info(device), threading.Lock(),
                                    cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue)))
            _RUNTIMES[device.int_ptr] = runtime
        return runtime
