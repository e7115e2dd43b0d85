"""hpvm-fpga-aoc is discovered through its entry point and says how it runs."""
from hpvm.registry import get_registry
from hpvm.target import CORE_API_VERSION


def test_fpga_aoc_target_is_discovered_by_name():
    info = get_registry().target("fpga_aoc")
    assert info.distribution == "hpvm-fpga-aoc"
    assert info.target.api_version == CORE_API_VERSION


def test_availability_says_emulation_when_there_is_no_fpga():
    availability = get_registry().target("fpga_aoc").availability
    assert availability.available  # the cpu target is always there to emulate on
    assert "EMULATION" in availability.reason and "model" in availability.reason
