"""The 'movidius' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class MovidiusTarget(Target):
    name = "movidius"
    description = ("Intel Movidius VPUs through an OpenVINO model, emulated when no VPU is "
                   "present")

    def availability(self) -> Availability:
        return Availability.no(
            "no OpenVINO model generator yet: the code generator lands with a later issue")
