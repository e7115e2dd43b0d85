"""hpvm-cpu is discovered through its entry point and reports its state."""
from hpvm.registry import get_registry
from hpvm.target import CORE_API_VERSION


def test_cpu_target_is_discovered_by_name():
    info = get_registry().target("cpu")
    assert info.distribution == "hpvm-cpu"
    assert info.target.api_version == CORE_API_VERSION


def test_cpu_target_gives_a_reason_when_unavailable():
    availability = get_registry().target("cpu").availability
    assert availability.available or availability.reason.strip()
