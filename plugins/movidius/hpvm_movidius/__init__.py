"""hpvm-movidius: the hpvm target 'movidius'.

Tensor graphs through OpenVINO: Intel's NPU (the Movidius line) where
present, OpenVINO's CPU plugin otherwise.
"""
