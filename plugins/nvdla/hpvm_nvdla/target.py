"""The 'nvdla' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class NvdlaTarget(Target):
    name = "nvdla"
    description = ("the NVIDIA Deep Learning Accelerator, emulated when no hardware is "
                   "present")

    def availability(self) -> Availability:
        return Availability.no(
            "no NVDLA loadable generator yet: the code generator lands with a later issue")
