"""``hpvm.lang``: the Python kernel language (the HeteroC++ idea).

    import hpvm.lang as hl
    from hpvm.lang import Buffer, f32, parallel_loop

    @hl.program
    def scale(x: Buffer[f32, "N"], y: Buffer[f32, "N"], a: f32):
        for i in parallel_loop(N, ins=(x,), outs=(y,)):
            y[i] = x[i] * a

Everything here is re-exported from hpvm.frontend; see its modules for the
rules (typing_rules.py, statements.py, program.py).
"""
from .frontend import *  # noqa: F401,F403
from .frontend import __all__  # noqa: F401
