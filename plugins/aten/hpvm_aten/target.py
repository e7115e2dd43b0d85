"""The 'aten' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class AtenTarget(Target):
    name = "aten"
    description = "tensor ops on ATen (PyTorch) kernels"

    def availability(self) -> Availability:
        return Availability.no(
            "no ATen code generator yet: the code generator lands with issue #7")
