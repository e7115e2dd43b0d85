"""Entry point of hpvm-fixedfunc: hands the 'fixedfunc' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import FixedFunctionTarget

    return [FixedFunctionTarget()]
