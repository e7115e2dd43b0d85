"""Entry point of hpvm-gpu-opencl: hands the 'gpu_opencl' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import GpuOpenCLTarget

    return [GpuOpenCLTarget()]
