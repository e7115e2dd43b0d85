"""Python's cyclic garbage collector paused while a program compiles.

Compiling a model allocates millions of short-lived objects (kernel IR,
llvmlite's IR, lowering tables), and each full collection the allocations
set off walks every object the process holds, a loaded torch model's
included: 0.7-0.9 s of MobileNetV2's 3 s compile on two cores.  Almost
all of that garbage is freed by reference counting anyway; paused, the
collector leaves the rest (about 30 MB for MobileNetV2) to its first
collection after the compile.  Nested and concurrent compiles share one
pause: the collector resumes when the last of them ends, and only if it
ran before the first began.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collector_paused():
    """``with collector_paused():`` no cyclic collection inside."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
