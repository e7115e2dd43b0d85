"""hpvm-fixedfunc: the hpvm target 'fixedfunc'.

Fixed-function accelerators claimed by semantic match against reference
kernels.
"""
