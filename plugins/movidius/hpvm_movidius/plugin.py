"""Entry point of hpvm-movidius: hands the 'movidius' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import MovidiusTarget

    return [MovidiusTarget()]
