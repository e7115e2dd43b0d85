"""hpvm-gpu-opencl is discovered through its entry point and reports its state."""
from hpvm.registry import get_registry
from hpvm.target import CORE_API_VERSION


def test_gpu_opencl_target_is_discovered_by_name():
    info = get_registry().target("gpu_opencl")
    assert info.distribution == "hpvm-gpu-opencl"
    assert info.target.api_version == CORE_API_VERSION


def test_gpu_opencl_target_gives_a_reason_when_unavailable():
    availability = get_registry().target("gpu_opencl").availability
    assert availability.available or availability.reason.strip()
