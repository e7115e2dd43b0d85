"""The 'fixedfunc' target: fixed-function accelerators claimed by semantic match against reference kernels."""
from hpvm.target import Availability, Target


class FixedFunctionTarget(Target):
    name = "fixedfunc"
    description = "fixed-function accelerators claimed by semantic match against reference kernels"

    def availability(self) -> Availability:
        return Availability.no("no fixed-function matcher or code generator yet: the code generator lands with a later issue")
