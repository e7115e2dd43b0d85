"""hpvm-fixedfunc: the hpvm target 'fixedfunc' (fixed-function accelerators claimed by semantic match against reference kernels)."""
