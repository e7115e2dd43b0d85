"""hpvm-movidius: the hpvm target 'movidius'.

Intel Movidius VPUs through an OpenVINO model, emulated when no VPU is
present.
"""
