"""The 'fpga_aoc' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class FpgaAocTarget(Target):
    name = "fpga_aoc"
    description = ("Intel FPGAs through the AOC OpenCL compiler, emulated when the tool is "
                   "absent")

    def availability(self) -> Availability:
        return Availability.no(
            "no AOC OpenCL code generator yet: the code generator lands with a later issue")
