"""The compile worker (hpvm.codegen.worker): a toolchain that aborts,
hangs or raises in it becomes an error here, and this process goes on."""
import os

import pytest

from hpvm.codegen import worker
from hpvm.codegen.worker import ToolchainCrash, run_isolated
from hpvm.errors import TargetError


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    monkeypatch.delenv("HPVM_COMPILE_IN_PROCESS", raising=False)


def test_a_call_runs_in_another_process():
    assert run_isolated("os:getpid") != os.getpid()
    assert run_isolated("math:hypot", (3.0, 4.0)) == 5.0


def test_an_abort_in_the_worker_is_a_toolchain_crash_and_the_next_call_works():
    with pytest.raises(ToolchainCrash, match=r"aborted \(SIGABRT\)") as crash:
        run_isolated("os:abort")
    assert crash.value.reason == "aborted (SIGABRT)"
    assert run_isolated("math:hypot", (6.0, 8.0)) == 10.0


def test_a_hang_is_stopped_at_the_timeout():
    with pytest.raises(ToolchainCrash, match=r"hung for more than 0.5 s"):
        run_isolated("time:sleep", (30,), timeout=0.5)
    assert run_isolated("math:hypot", (3.0, 4.0)) == 5.0


def test_what_the_toolchain_printed_last_is_in_the_message():
    with pytest.raises(ToolchainCrash, match="the last words"):
        run_isolated("hpvm.codegen.worker:_print_and_abort", ("the last words",))


def test_an_exception_in_the_function_comes_back_as_a_target_error():
    with pytest.raises(TargetError, match="ValueError: math domain error"):
        run_isolated("math:sqrt", (-1.0,))


def test_in_process_mode_runs_here(monkeypatch):
    monkeypatch.setenv("HPVM_COMPILE_IN_PROCESS", "1")
    assert worker.in_process() and run_isolated("os:getpid") == os.getpid()


def test_a_forked_child_gets_a_worker_of_its_own():
    import multiprocessing
    parent_worker = run_isolated("os:getppid")
    assert parent_worker == os.getpid()
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        child_pid, worker_parent = pool.apply(_child_call)
    assert worker_parent == child_pid != os.getpid()
    assert run_isolated("os:getppid") == os.getpid()


def _child_call():
    return os.getpid(), run_isolated("os:getppid")


def test_calls_from_several_threads_run_in_workers_of_their_own(monkeypatch):
    import threading
    monkeypatch.setenv("HPVM_COMPILE_JOBS", "2")
    slow = threading.Thread(target=run_isolated, args=("time:sleep", (3.0,)))
    slow.start()
    try:
        assert run_isolated("math:hypot", (3.0, 4.0)) == 5.0
        assert slow.is_alive()   # the quick call did not wait for the slow one
    finally:
        slow.join()


def test_one_compile_job_makes_calls_wait_their_turn(monkeypatch):
    import threading
    monkeypatch.setenv("HPVM_COMPILE_JOBS", "1")
    worker._POOL.close()
    slow = threading.Thread(target=run_isolated, args=("time:sleep", (1.0,)))
    slow.start()
    while not slow.is_alive():
        pass
    import time
    time.sleep(0.2)   # the slow call has taken the only worker
    run_isolated("math:hypot", (3.0, 4.0))
    assert not slow.is_alive()
    slow.join()


def test_compile_jobs_follow_the_variable_else_the_cores(monkeypatch):
    from hpvm.threads import available_cores
    monkeypatch.setenv("HPVM_COMPILE_JOBS", "3")
    assert worker.compile_jobs() == 3
    monkeypatch.delenv("HPVM_COMPILE_JOBS")
    assert worker.compile_jobs() == min(available_cores(), worker.MAX_COMPILE_JOBS)


def test_warming_up_starts_the_missing_workers(monkeypatch):
    monkeypatch.setenv("HPVM_COMPILE_JOBS", "2")
    worker._POOL.close()
    threads = worker.warm_up(("json",))
    assert len(threads) == 2
    for thread in threads:
        thread.join()
    assert worker._POOL.unstarted(2) == 0 and worker.warm_up(("json",)) == []
    assert run_isolated("math:hypot", (3.0, 4.0)) == 5.0


def test_warming_up_starts_no_more_workers_than_asked_or_allowed(monkeypatch):
    """A compile of one kernel warms one worker: a second would still be
    loading its toolchain when the program first runs."""
    monkeypatch.setenv("HPVM_COMPILE_JOBS", "2")
    worker._POOL.close()
    threads = worker.warm_up(("json",), 1)
    assert len(threads) == 1
    threads[0].join()
    assert worker._POOL.unstarted(2) == 1
    threads = worker.warm_up(("json",), 5)  # capped at compile_jobs()
    assert len(threads) == 1
    threads[0].join()


def test_warming_up_in_process_starts_nothing(monkeypatch):
    monkeypatch.setenv("HPVM_COMPILE_IN_PROCESS", "1")
    assert worker.warm_up(("json",)) == []
