"""Entry point of hpvm-nvdla: hands the 'nvdla' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import NvdlaTarget

    return [NvdlaTarget()]
