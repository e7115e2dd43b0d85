"""Entry point of hpvm-fpga-aoc: hands the 'fpga_aoc' target to hpvm."""
import hpvm


@hpvm.hookimpl
def hpvm_targets():
    from .target import FpgaAocTarget

    return [FpgaAocTarget()]
