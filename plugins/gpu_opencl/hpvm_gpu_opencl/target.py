"""The 'gpu_opencl' target (a placeholder until its code generator lands)."""
from hpvm.target import Availability, Target


class GpuOpenCLTarget(Target):
    name = "gpu_opencl"
    description = "GPUs and other OpenCL devices through OpenCL C (PoCL, NVIDIA)"

    def availability(self) -> Availability:
        return Availability.no(
            "no OpenCL C code generator yet: the code generator lands with issue #5")
