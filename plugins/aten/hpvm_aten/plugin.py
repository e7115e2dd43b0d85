"""Entry point of hpvm-aten: hands the 'aten' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import AtenTarget

    return [AtenTarget()]
