"""Tests that need a working OpenCL device are skipped, with the reason
``hpvm targets`` gives, where gpu_opencl is unavailable (no ICD, or only
devices whose compiler fails, such as PoCL 3.0 on AMD Zen 5); the plugin's
discovery and availability tests run everywhere."""
import pytest

NEEDS_NO_DEVICE = {"test_plugin.py", "test_transfers.py", "test_instance_layout.py"}


def pytest_collection_modifyitems(config, items):
    from hpvm.registry import get_registry
    availability = get_registry().target("gpu_opencl").availability
    if availability.available:
        return
    skip = pytest.mark.skip(reason=f"gpu_opencl unavailable: {availability.reason}")
    for item in items:
        if item.path.parent.name == "tests" and "gpu_opencl" in item.path.parts \
                and item.path.name not in NEEDS_NO_DEVICE:
            item.add_marker(skip)
