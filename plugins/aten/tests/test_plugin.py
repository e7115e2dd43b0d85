"""hpvm-aten is discovered through its entry point and reports its state."""
from hpvm.registry import get_registry
from hpvm.target import CORE_API_VERSION


def test_aten_target_is_discovered_by_name():
    info = get_registry().target("aten")
    assert info.distribution == "hpvm-aten"
    assert info.target.api_version == CORE_API_VERSION


def test_aten_target_gives_a_reason_when_unavailable():
    availability = get_registry().target("aten").availability
    assert availability.available or availability.reason.strip()
