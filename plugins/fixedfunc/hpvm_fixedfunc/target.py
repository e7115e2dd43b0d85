"""The 'fixedfunc' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class FixedFunctionTarget(Target):
    name = "fixedfunc"
    description = ("fixed-function accelerators claimed by semantic match against "
                   "reference kernels")

    def availability(self) -> Availability:
        return Availability.no(
            "no semantic matcher yet: the code generator lands with a later issue")
