"""The cyclic garbage collector is paused while a program compiles
(runtime/collector.py) and resumes as it was."""
import gc
import threading

import numpy as np
import pytest

import hpvm
from hpvm.errors import HpvmError
from hpvm.lang import Buffer, f32, parallel_loop
from hpvm.runtime import collector
from hpvm.runtime.collector import collector_paused


def test_nested_and_concurrent_pauses_resume_once_the_last_ends():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        entered, leave = threading.Event(), threading.Event()

        def other():
            with collector_paused():
                entered.set()
                leave.wait(10)
        thread = threading.Thread(target=other)
        thread.start()
        entered.wait(10)
    assert not gc.isenabled()  # the other thread's compile is still running
    leave.set()
    thread.join()
    assert gc.isenabled() and collector._depth == 0


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_compile_pauses_the_collector_and_resumes_it_after_an_error(monkeypatch):
    from hpvm.runtime import compiler
    seen = []
    plan = compiler.plan

    def recording_plan(*args, **kwargs):
        seen.append(gc.isenabled())
        return plan(*args, **kwargs)
    monkeypatch.setattr(compiler, "plan", recording_plan)

    @hpvm.program
    def double(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):  # noqa: F821
        for i in parallel_loop(N, ins=(x,), outs=(y,), name="double"):  # noqa: F821
            y[i] = x[i] * 2.0

    exe = hpvm.compile(double, ["interp"])
    assert seen == [False] and gc.isenabled()
    x = np.ones(8, np.float32)
    np.testing.assert_array_equal(exe(x=x)["y"], x * 2)
    with pytest.raises(HpvmError):
        hpvm.compile(double, ["no-such-target"])
    assert gc.isenabled()
