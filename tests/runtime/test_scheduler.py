import threading
import time

import pytest

from hpvm.runtime.scheduler import DagScheduler


@pytest.fixture
def scheduler():
    s = DagScheduler(workers=4)
    yield s
    s.shutdown()


def test_jobs_run_after_their_dependencies(scheduler):
    order = []
    scheduler.add("a", [], lambda: order.append("a"))
    scheduler.add("b", ["a"], lambda: order.append("b"))
    scheduler.add("c", ["a", "b"], lambda: order.append("c")).result(5)
    assert order == ["a", "b", "c"]


def test_independent_jobs_run_concurrently(scheduler):
    barrier = threading.Barrier(2, timeout=5)
    scheduler.add("x", [], barrier.wait)
    scheduler.add("y", [], barrier.wait)
    scheduler.add("end", ["x", "y"], lambda: "ok").result(5)  # would time out if serial


def test_a_failure_fails_every_dependent(scheduler):
    def fail():
        raise ValueError("boom")

    scheduler.add("a", [], fail)
    dependent = scheduler.add("b", ["a"], lambda: "never")
    with pytest.raises(ValueError, match="boom"):
        dependent.result(5)
    late = scheduler.add("c", ["a"], lambda: "never")
    with pytest.raises(ValueError, match="boom"):
        late.result(5)


def test_jobs_added_after_their_dependency_finished_still_run(scheduler):
    scheduler.add("a", [], lambda: 1).result(5)
    time.sleep(0.01)
    assert scheduler.add("b", ["a"], lambda: 2).result(5) == 2


def test_a_held_job_waits_for_release(scheduler):
    ran = threading.Event()
    future = scheduler.add("held", [], ran.set, hold=True)
    time.sleep(0.05)
    assert not ran.is_set()
    scheduler.release("held")
    future.result(5)
    assert ran.is_set()


def test_run_here_runs_the_job_and_its_chain_in_the_calling_thread(scheduler):
    threads = []
    scheduler.add("a", [], lambda: threads.append(threading.get_ident()), hold=True)
    last = scheduler.add("b", ["a"], lambda: threads.append(threading.get_ident()))
    scheduler.run_here("a")
    assert last.done()
    assert threads == [threading.get_ident()] * 2


def test_an_inline_job_runs_in_the_thread_that_makes_it_ready(scheduler):
    threads = {}
    record = lambda name: (lambda: threads.__setitem__(name, threading.get_ident()))
    scheduler.add("now", [], record("now"), inline=True)
    assert threads["now"] == threading.get_ident()  # ready at once: the caller ran it
    go = threading.Event()
    scheduler.add("a", [], lambda: (go.wait(5), record("a")()))
    scheduler.add("b", ["a"], record("b"), inline=True)
    scheduler.add("c", ["a"], record("c"), inline=True)
    last = scheduler.add("d", ["b", "c"], record("d"))
    go.set()
    last.result(5)
    assert threads["a"] != threading.get_ident()
    assert threads["b"] == threads["c"] == threads["a"]


def test_a_failed_dependency_fails_an_inline_job(scheduler):
    scheduler.add("a", [], lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        scheduler.add("b", ["a"], lambda: "never", inline=True).result(5)
