"""Entry point of hpvm-cpu: hands the 'cpu' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import CpuTarget

    return [CpuTarget()]
