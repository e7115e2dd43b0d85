"""hpvm-fpga-aoc: the hpvm target 'fpga_aoc'.

Intel FPGAs through the AOC OpenCL compiler, emulated when the tool is
absent.
"""
